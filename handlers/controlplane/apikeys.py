"""API keys: created, listed and revoked from the shell; checked on every API request.

A token is ``cfk_<keyId>_<secret>`` with 256 random bits of secret. Redis keeps only
the SHA-256 of the whole token (a random token of that strength needs no slow hash),
next to its workspace, role, name and times, in ``apikey:{keyId}``. Every request
reads that hash afresh, so a revocation or an expiry holds on the next request in
every API process: there is no per-process cache to invalidate.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from chatflow.runtime.errors import ChatflowError
from chatflow.runtime.registry import DEFAULT_WORKSPACE

from ..keys import Keys
from ..redis_client import Client

ROLES = ("admin", "editor", "viewer")
WORKSPACE_RE = re.compile(r"[a-z0-9-]{1,40}")
TOKEN_RE = re.compile(r"cfk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
DAY_MS = 86_400_000


class ApiKeyError(ChatflowError):
    """Raised when a key cannot be created or revoked as asked (bad workspace, role, id)."""


@dataclass(frozen=True, slots=True)
class ApiKey:
    key_id: str
    name: str
    workspace: str
    role: str
    created_at: int
    expires_at: int | None
    revoked_at: int | None
    last_used_at: int | None

    def listing(self) -> dict[str, Any]:
        return {"keyId": self.key_id, "name": self.name, "workspace": self.workspace,
                "role": self.role, "createdAt": self.created_at, "expiresAt": self.expires_at,
                "revokedAt": self.revoked_at, "lastUsedAt": self.last_used_at}


def now_ms() -> int:
    return int(time.time() * 1000)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_workspace(workspace: str) -> str:
    if not WORKSPACE_RE.fullmatch(workspace):
        raise ApiKeyError(f"workspace {workspace!r}: must match [a-z0-9-]{{1,40}}")
    return workspace


async def create_api_key(client: Client, keys: Keys, *, workspace: str, role: str,
                         name: str | None = None, expires_in_days: float | None = None,
                         now: int | None = None) -> tuple[str, str]:
    """A new key; returns ``(key_id, token)``. The token is never stored. A workspace
    that does not exist yet is created. ``now`` (epoch ms) is the clock, for tests."""
    check_workspace(workspace)
    if role not in ROLES:
        raise ApiKeyError(f"role {role!r}: must be one of {', '.join(ROLES)}")
    if expires_in_days is not None and expires_in_days <= 0:
        raise ApiKeyError(f"expires-in {expires_in_days}: must be a positive number of days")
    created = now_ms() if now is None else now
    key_id = secrets.token_hex(8)
    token = f"cfk_{key_id}_{secrets.token_urlsafe(32)}"
    expires = "" if expires_in_days is None else str(created + int(expires_in_days * DAY_MS))
    record = {"hash": token_hash(token), "name": name or f"{role}-{key_id[:6]}",
              "workspace": workspace, "role": role, "createdAt": str(created),
              "expiresAt": expires, "revokedAt": "", "lastUsedAt": ""}
    await client.hset(keys.api_key(key_id), mapping=record)
    await client.sadd(keys.api_keys, key_id)
    await client.sadd(keys.workspaces, workspace)
    return key_id, token


def _int(value: bytes | None) -> int | None:
    return int(value) if value else None


def _parse(key_id: str, raw: dict[bytes, bytes]) -> ApiKey:
    return ApiKey(key_id, raw.get(b"name", b"").decode(), raw[b"workspace"].decode(),
                  raw[b"role"].decode(), _int(raw.get(b"createdAt")) or 0,
                  _int(raw.get(b"expiresAt")), _int(raw.get(b"revokedAt")),
                  _int(raw.get(b"lastUsedAt")))


async def list_api_keys(client: Client, keys: Keys,
                        workspace: str | None = None) -> list[dict[str, Any]]:
    """Every key (revoked and expired ones too), oldest first; never a token or its hash."""
    out = []
    for raw_id in await client.smembers(keys.api_keys):
        key_id = raw_id.decode()
        raw = await client.hgetall(keys.api_key(key_id))
        if raw and (workspace is None or raw[b"workspace"].decode() == workspace):
            out.append(_parse(key_id, raw))
    return [k.listing() for k in sorted(out, key=lambda k: (k.created_at, k.key_id))]


async def revoke_api_key(client: Client, keys: Keys, key_id: str,
                         now: int | None = None) -> None:
    """Revoke at once: the next request with the key answers 401, in every API process."""
    if not await client.exists(keys.api_key(key_id)):
        raise ApiKeyError(f"no API key {key_id!r} (chatflow keys list shows them)")
    await client.hset(keys.api_key(key_id), "revokedAt", str(now_ms() if now is None else now))


async def list_workspaces(client: Client, keys: Keys) -> list[str]:
    found = {w.decode() for w in await client.smembers(keys.workspaces)}
    return sorted(found | {DEFAULT_WORKSPACE})


async def verify_token(client: Client, keys: Keys, token: str,
                       now: int | None = None) -> tuple[ApiKey | None, str]:
    """The live key a token names, and why not when it is ``None`` (a message for the 401).
    Records the key's last use."""
    match = TOKEN_RE.fullmatch(token)
    if match is None:
        return None, "the bearer token is not a chatflow API key"
    key_id = match.group(1)
    raw = await client.hgetall(keys.api_key(key_id))
    stored = raw.get(b"hash", b"").decode() if raw else ""
    # Compared in constant time even when the key id is unknown, so timing says nothing.
    if not hmac.compare_digest(stored or "0" * 64, token_hash(token)) or not stored:
        return None, "unknown API key"
    key = _parse(key_id, raw)
    at = now_ms() if now is None else now
    if key.revoked_at is not None:
        return None, "this API key was revoked"
    if key.expires_at is not None and at >= key.expires_at:
        return None, "this API key has expired"
    await client.hset(keys.api_key(key_id), "lastUsedAt", str(at))
    return key, ""
