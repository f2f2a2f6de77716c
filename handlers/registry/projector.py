"""Write the projections of the registry state: the keys the runtime reads and the API's lists.

Projections are not atomic with the log (their keys are public names in many
slots); they converge instead. A writer always projects from a state caught up
with the whole log, then reads the log again, and projects again if it moved
(:meth:`handlers.registry.Registry.catch_up`): the last projection written always
reflects the whole log. ``chatflow registry rebuild`` rewrites them all.

During a key rotation (docs/operations.md) a process not yet restarted may meet a secret
written under a key it does not hold. It cannot know the value, and a process that holds the
key has already projected it, so it keeps what is there: that secret's cached value and the
workspace's masking entries are left as they are (:data:`KEPT`), not blanked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from chatflow.runtime.registry import Ref, RegistryState, workspace_of
from chatflow.runtime.registry.records import record_bytes
from chatflow.runtime.registry.state import Record
from chatflow.runtime.registry.views import (
    agent_cache,
    credential_cache,
    credential_view,
    published_record,
    server_cache,
    server_view,
    tool_view,
)

from ..keys import Keys
from ..redis_client import Client, Pipeline
from .crypto import SecretBox
from .errors import ApiCode, Invalid

log = structlog.get_logger("chatflow.registry")
VIEWS = ("tools", "servers", "credentials")
# What decrypting gives for a secret under a key this process does not hold: a record holding
# one leaves its runtime cache as it is (a NUL cannot be in a header or an API key).
KEPT = "\0kept"


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _has_kept(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_kept(v) for v in value.values())
    return bool(value == KEPT)


class Projector:
    def __init__(self, client: Client, keys: Keys, box: SecretBox) -> None:
        self.client = client
        self.keys = keys
        self.box = box
        self._unknown_keys: set[str] = set()  # warned about once each

    def _decrypt(self, token: str) -> str:
        try:
            return self.box.decrypt(token)
        except Invalid as exc:
            if exc.code == ApiCode.SECRET_KEY_UNKNOWN:
                key = SecretBox.key_of(token) or ""
                if key not in self._unknown_keys:
                    self._unknown_keys.add(key)
                    log.warning("a stored secret is under a key this process does not hold: "
                                "its cached value and masking entry are kept", key_id=key)
                return KEPT
            log.warning("secret left empty in a cache projection", reason=str(exc.code))
            return ""

    async def write(self, state: RegistryState, refs: Iterable[Ref], last_id: str) -> None:
        k = self.keys
        refs = set(refs)
        secrets = any(kind in ("server", "credential") for kind, _ in refs)
        listed = await self.client.smembers(k.workspace_secrets_index) if secrets else set()
        caches = self._caches(state, refs)
        async with self.client.pipeline(transaction=False) as pipe:
            for kind, ident in sorted(set(refs)):
                if kind == "tool":
                    self._tool(pipe, state, ident)
                elif kind == "pt":
                    owner = state.tools.get(state.published.get(ident, ""))
                    record = published_record(owner) if owner else None
                    if record is None:
                        pipe.delete(k.tool(ident))
                    else:
                        pipe.set(k.tool(ident), record_bytes(record))
                elif kind == "server":
                    self._cached(pipe, "servers", ident, k.server(ident),
                                 state.servers.get(ident), caches, server_view)
                elif kind == "credential":
                    self._cached(pipe, "credentials", ident, k.llm_credential(ident),
                                 state.credentials.get(ident), caches, credential_view)
                elif kind == "agent":
                    cache = agent_cache(state, ident)
                    if cache is None:
                        pipe.delete(k.ai_agent(ident))
                    else:
                        pipe.set(k.ai_agent(ident), _json(cache))
            if secrets:
                self._secrets(pipe, state, {_text(w) for w in listed})
            pipe.set(k.registry_projected, last_id)
            await pipe.execute()

    def _secrets(self, pipe: Pipeline, state: RegistryState, listed: set[str]) -> None:
        """Each workspace's stored secret values, as one set (``Keys.workspace_secrets``):
        what every recorder masks wherever it appears (handlers/redaction.py). Rewritten
        whole when a server or credential changed; a workspace left with none loses its set."""
        by_workspace: dict[str, set[str]] = {}
        for server in state.servers.values():
            layers = [server, *server.get("endpoints", {}).values()]
            values = {self._decrypt(h["value"]) for layer in layers
                      for h in layer.get("headers") or [] if h.get("secret")}
            by_workspace.setdefault(workspace_of(server), set()).update(values)
        for cred in state.credentials.values():
            if cred.get("apiKey"):
                by_workspace.setdefault(workspace_of(cred), set()).add(
                    self._decrypt(cred["apiKey"]))
        index = self.keys.workspace_secrets_index
        for workspace, values in by_workspace.items():
            key = self.keys.workspace_secrets(workspace)
            if KEPT not in values:  # else merged into the set: it holds what this cannot read
                pipe.delete(key)
            if values - {"", KEPT}:
                pipe.sadd(key, *sorted(values - {"", KEPT}))
            pipe.sadd(index, workspace)
        for gone in listed - set(by_workspace):  # its last server or credential was deleted
            pipe.delete(self.keys.workspace_secrets(gone))
            pipe.srem(index, gone)

    def _tool(self, pipe: Pipeline, state: RegistryState, tool_id: str) -> None:
        k = self.keys
        tool = state.tools.get(tool_id)
        if tool_id not in state.published:
            # The key an older publisher wrote under Tool.id (a legacy cache entry).
            pipe.delete(k.tool(tool_id))
        if tool is None:
            pipe.hdel(k.registry_view("tools"), tool_id)
        else:
            pipe.hset(k.registry_view("tools"), tool_id, _json(tool_view(tool)))

    def _caches(self, state: RegistryState, refs: set[Ref]) -> dict[str, Any]:
        """The runtime cache of each server and credential in ``refs`` (secrets decrypted);
        None for one holding a secret this process cannot read: a process that holds the key
        wrote that cache, and this one leaves it as it is."""
        out: dict[str, Any] = {}
        for kind, ident in refs:
            if kind == "server" and ident in state.servers:
                out[self.keys.server(ident)] = server_cache(state.servers[ident], self._decrypt)
            elif kind == "credential" and ident in state.credentials:
                out[self.keys.llm_credential(ident)] = credential_cache(
                    state.credentials[ident], self._decrypt)
        return {key: None if _has_kept(cache) else cache for key, cache in out.items()}

    def _cached(self, pipe: Pipeline, view: str, item_id: str, cache_key: str,
                item: Record | None, caches: dict[str, Any],
                view_of: Callable[[Record], Record]) -> None:
        """A record's runtime cache key (from :meth:`_caches`) and its row in the API's view."""
        if item is None:
            pipe.delete(cache_key)
            pipe.hdel(self.keys.registry_view(view), item_id)
            return
        if caches[cache_key] is not None:  # else left as a process holding its key wrote it
            pipe.set(cache_key, _json(caches[cache_key]))
        pipe.hset(self.keys.registry_view(view), item_id, _json(view_of(item)))

    async def clear_views(self) -> None:
        await self.client.delete(*(self.keys.registry_view(v) for v in VIEWS))
