"""Requests that hold a connection for long: live-debug streams, ``?wait=true`` forks and the
builder's test runs. Each is a lease, capped per API key and per workspace across every API
process (two sorted sets in Valkey, one Lua call), and per process; the waiting ones read
Valkey through a pool of their own, so a tenant holding its whole budget leaves the pool
every other request uses untouched.

Caps (docs/security.md, "Per-tenant bounds"): ``CHATFLOW_API_HELD_PER_KEY``,
``CHATFLOW_API_HELD_PER_WORKSPACE``, ``CHATFLOW_API_HELD_MAX`` (this process, and the size of
its pool). Over one, the request is answered 429 naming the limit. A lease expires by itself
``LEASE_MS`` after its last renewal, so one left by a killed API process comes back.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from ..keys import Keys
from ..redis_client import Client, make_client
from ..registry.errors import ApiCode, RegistryError
from ..settings import Settings

# A held stream renews its lease with every heartbeat (handlers/api/debug_routes.py), well
# inside this; a wait renews it once, for its whole timeout.
LEASE_MS = 60_000
# The pool's socket timeout: longer than any blocking read made on it (a debug stream's
# heartbeat block, a wait's one-second block), so an idle stream is never cut by a timeout.
READ_TIMEOUT_S = 30.0

_ACQUIRE = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 2 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return 0
"""


class TooManyHeld(RegistryError):
    """Raised when a request would hold more connections than its key, its workspace or the
    API process may (429)."""

    status = 429
    code = ApiCode.TOO_MANY_HELD


@dataclass(slots=True)
class Lease:
    """One held request: what it reads Valkey through, and how it stays counted."""

    client: Client
    key_id: str
    workspace: str
    lease_id: str
    _held: HeldConnections

    async def renew(self, for_ms: int | None = None) -> None:
        await self._held.renew(self, for_ms or LEASE_MS)


class HeldConnections:
    def __init__(self, settings: Settings, keys: Keys, client: Client) -> None:
        self.settings = settings
        self.keys = keys
        self.client = client  # the API's own: leases are counted through it
        # Without a URL (an app handed its client) the waits share that client's pool.
        self.pool = client if not settings.redis_url else make_client(
            settings.redis_url, cluster=settings.redis_cluster,
            max_connections=settings.api_held_max, read_timeout_s=READ_TIMEOUT_S)
        self._own_pool = bool(settings.redis_url)
        self.local = 0
        self._acquire = client.register_script(_ACQUIRE)

    def _refuse(self, what: str, cap: int, setting: str) -> TooManyHeld:
        return TooManyHeld(f"{what} already holds {cap} long requests (live-debug streams, "
                           f"waits, test runs), the most {setting} allows; close one and "
                           "try again", limit=cap, setting=setting)

    @asynccontextmanager
    async def hold(self, key_id: str, workspace: str,
                   for_ms: int | None = None) -> AsyncIterator[Lease]:
        """A lease for one held request, released when the block ends; 429 over a cap."""
        s = self.settings
        for_ms = for_ms or LEASE_MS
        if self.local >= s.api_held_max:
            raise self._refuse("this API process", s.api_held_max, "CHATFLOW_API_HELD_MAX")
        lease_id = uuid.uuid4().hex
        now = int(time.time() * 1000)
        refused = int(await self._acquire(
            keys=[self.keys.held_by_key(key_id), self.keys.held_by_workspace(workspace)],
            args=[now, now + for_ms, lease_id, s.api_held_per_key, s.api_held_per_workspace,
                  for_ms * 2]))
        if refused == 1:
            raise self._refuse("this API key", s.api_held_per_key, "CHATFLOW_API_HELD_PER_KEY")
        if refused == 2:
            raise self._refuse(f"workspace {workspace!r}", s.api_held_per_workspace,
                               "CHATFLOW_API_HELD_PER_WORKSPACE")
        self.local += 1
        lease = Lease(self.pool, key_id, workspace, lease_id, self)
        try:
            yield lease
        finally:
            self.local -= 1
            # Shielded: a stream ends when its client goes, by cancellation, and the lease
            # must still be given back (else it lapses only after LEASE_MS).
            with anyio.CancelScope(shield=True):
                await self._release(lease)

    async def renew(self, lease: Lease, for_ms: int) -> None:
        until = int(time.time() * 1000) + for_ms
        async with self.client.pipeline(transaction=False) as pipe:
            for key in (self.keys.held_by_key(lease.key_id),
                        self.keys.held_by_workspace(lease.workspace)):
                pipe.zadd(key, {lease.lease_id: until}, xx=True)
                pipe.pexpire(key, for_ms * 2)
            await pipe.execute()

    async def _release(self, lease: Lease) -> None:
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.zrem(self.keys.held_by_key(lease.key_id), lease.lease_id)
            pipe.zrem(self.keys.held_by_workspace(lease.workspace), lease.lease_id)
            await pipe.execute()

    async def aclose(self) -> None:
        if self._own_pool:
            await self.pool.aclose()
