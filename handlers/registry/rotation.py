"""Re-encrypt every stored secret under the current key (``chatflow keys rotate-encryption``).

A secret is rewritten the way any change is: a ``server.updated`` event (the server's and its
endpoints' headers) or a ``credential.updated`` event (the apiKey), each checked against the
object's version, so a rotation can run beside live API processes. Once it has run, every
secret the registry holds carries the current key's id and older keys can be removed from
``CHATFLOW_ENCRYPTION_KEYS``. The log still holds the older ciphertexts in its past events,
unreadable without the old key, which is the point of removing it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from chatflow.runtime.errors import ChatflowError
from chatflow.runtime.registry import RegistryState, workspace_of
from chatflow.runtime.registry.state import Record

from .crypto import SecretBox
from .errors import ApiCode, Invalid
from .log import Append
from .registry import Registry
from .scope import Scope


@dataclass
class Rotation:
    key: str | None
    secrets: int = 0  # re-encrypted
    objects: list[str] = field(default_factory=list)  # "server srv-1", "credential cred-1"
    failed: list[str] = field(default_factory=list)  # what no configured key could read

    def report(self) -> dict[str, Any]:
        return {"key": self.key, "secrets": self.secrets, "objects": self.objects,
                "failed": self.failed}


def _stale(box: SecretBox, token: Any) -> bool:
    return isinstance(token, str) and box.key_of(token) != box.current_id


def _headers(box: SecretBox, headers: list[Record], where: str, out: Rotation
             ) -> tuple[list[Record], int]:
    done = 0
    fresh = []
    for header in headers:
        if header.get("secret") and _stale(box, header.get("value")):
            try:
                header = {**header, "value": box.encrypt(box.decrypt(header["value"]))}
                done += 1
            except Invalid:
                out.failed.append(f"{where}.headers.{header.get('name')}")
        fresh.append(header)
    return fresh, done


def _server_changes(box: SecretBox, server: Record, out: Rotation) -> tuple[dict[str, Any], int]:
    where = f"server {server['id']}"
    headers, done = _headers(box, server.get("headers") or [], where, out)
    endpoints = copy.deepcopy(server.get("endpoints") or {})
    for endpoint in endpoints.values():
        endpoint["headers"], more = _headers(box, endpoint.get("headers") or [],
                                             f"{where} endpoint {endpoint['id']}", out)
        done += more
    return {"headers": headers, "endpoints": endpoints}, done


async def rotate_secrets(registry: Registry) -> dict[str, Any]:
    """Every stored secret under the current key; what was done, and what could not be."""
    box = registry.box
    if not box.ready:
        raise Invalid("no encryption key configured: set CHATFLOW_ENCRYPTION_KEYS (the new "
                      "key first, then the old ones)", code=ApiCode.ENCRYPTION_KEY_MISSING)
    out = Rotation(box.current_id)
    await registry.catch_up()
    for server_id in sorted(registry.state.servers):
        await _rotate(registry, "server", server_id, out)
    for cred_id in sorted(registry.state.credentials):
        await _rotate(registry, "credential", cred_id, out)
    return out.report()


async def _rotate(registry: Registry, kind: str, item_id: str, out: Rotation) -> None:
    box = registry.box
    counted = 0
    failed_before = len(out.failed)

    def build(state: RegistryState) -> Append:
        nonlocal counted
        del out.failed[failed_before:]  # a retried build counts again
        table = state.servers if kind == "server" else state.credentials
        item = table[item_id]
        if kind == "server":
            changes, counted = _server_changes(box, item, out)
        else:
            counted, changes = 0, {}
            if _stale(box, item.get("apiKey")):
                try:
                    changes = {"apiKey": box.encrypt(box.decrypt(item["apiKey"]))}
                    counted = 1
                except Invalid:
                    out.failed.append(f"credential {item_id}.apiKey")
        if not counted:
            raise _Unreadable  # nothing this process can re-encrypt: append nothing
        name = f"{kind}:{item_id}"
        event = {"type": f"{kind}.updated", "id": item_id, "changes": changes}
        return Append(event, {name: str(item["version"])}, {name: str(item["version"] + 1)})

    table = registry.state.servers if kind == "server" else registry.state.credentials
    item = table.get(item_id)
    if item is None or not _needs(box, kind, item):
        return
    try:
        await registry.commit(build, Scope(workspace_of(item), "shell", "shell"))
    except _Unreadable:
        return
    if counted:
        out.secrets += counted
        out.objects.append(f"{kind} {item_id}")


class _Unreadable(ChatflowError):
    """Raised when an object's stale secrets are all unreadable: there is nothing to write."""


def _needs(box: SecretBox, kind: str, item: Record) -> bool:
    if kind == "credential":
        return _stale(box, item.get("apiKey"))
    headers = list(item.get("headers") or [])
    for endpoint in (item.get("endpoints") or {}).values():
        headers += endpoint.get("headers") or []
    return any(h.get("secret") and _stale(box, h.get("value")) for h in headers)
