"""The runtime's Redis I/O: loading states, committing transitions, publishing once.

This module is the one place where the state machine's decisions meet Redis.
Every call that carries many items is pipelined: workers handle steps in
batches, and the round trips, not Redis, are the cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

from runtime.state import ExecState, Transition, state_decoder, state_encoder

from .keys import STEPS_GROUP, Keys
from .redis_client import Client

_COMMIT = resources.files("handlers").joinpath("lua/commit.lua").read_text()
_PUBLISH_ONCE = resources.files("handlers").joinpath("lua/publish_once.lua").read_text()

COMMITTED, ALREADY_ANSWERED, STALE, DUPLICATE = 1, 0, -1, 2


@dataclass(slots=True)
class Commit:
    """A transition to commit for one step entry (``ack_id``), or a bare ack."""

    partition: int
    root_id: str
    transition: Transition | None
    ack_id: bytes | str | None = None
    command_guard: str | None = None
    deadline: tuple[int, str] | None = None


@dataclass(slots=True)
class Publish:
    stream: str
    marker: str
    data: bytes
    maxlen: int = 0


class Store:
    def __init__(self, client: Client, keys: Keys, *, state_ttl_s: int, dedup_ttl_s: int,
                 marker_ttl_s: int) -> None:
        self.client = client
        self.keys = keys
        self.state_ttl_s = state_ttl_s
        self.dedup_ttl_s = dedup_ttl_s
        self.marker_ttl_s = marker_ttl_s
        self._commit = client.register_script(_COMMIT)
        self._publish = client.register_script(_PUBLISH_ONCE)

    # -- reads -----------------------------------------------------------------

    async def get_tool(self, published_tool_id: str) -> bytes | None:
        value: bytes | None = await self.client.get(self.keys.tool(published_tool_id))
        return value

    async def get_server(self, server_id: str) -> bytes | None:
        """``integration:server:{serverId}``: the IntegrationServerCacheConfig (callEndpoint)."""
        value: bytes | None = await self.client.get(self.keys.server(server_id))
        return value

    async def get_credential(self, credential_id: str) -> bytes | None:
        """``llm:credential:{id}`` (runtime.blocks.ai.CredentialSource)."""
        value: bytes | None = await self.client.get(self.keys.llm_credential(credential_id))
        return value

    async def get_tools(self, ids: list[str]) -> list[bytes | None]:
        if not ids:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for pt in ids:
                pipe.get(self.keys.tool(pt))
            return list(await pipe.execute())

    async def debug_flags(self, contact_ids: list[str]) -> list[bool]:
        if not contact_ids:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for contact in contact_ids:
                pipe.exists(self.keys.debug_flag(contact))
            return [bool(x) for x in await pipe.execute()]

    async def load_states(self, refs: list[tuple[int, str]]) -> list[ExecState | None]:
        if not refs:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for partition, exec_id in refs:
                pipe.hget(self.keys.state(partition, exec_id), "s")
            blobs = await pipe.execute()
        return [state_decoder.decode(b) if b else None for b in blobs]

    async def load_definitions(self, refs: list[tuple[int, str]]) -> list[bytes | None]:
        if not refs:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for partition, digest in refs:
                pipe.get(self.keys.definition(partition, digest))
            return list(await pipe.execute())

    async def read_log(self, partition: int, exec_id: str) -> list[bytes]:
        entries = await self.client.xrange(self.keys.events(partition, exec_id))
        return [fields[b"d"] for _id, fields in entries]

    # -- writes ----------------------------------------------------------------

    async def commit(self, commits: list[Commit]) -> list[int]:
        """Commit transitions (atomic each) in one round trip; returns each script's verdict."""
        if not commits:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for c in commits:
                if c.transition is None:
                    pipe.xack(self.keys.steps(c.partition), STEPS_GROUP, c.ack_id)
                    pipe.xdel(self.keys.steps(c.partition), c.ack_id)
                else:
                    keys, args = self._commit_args(c)
                    await self._commit(keys=keys, args=args, client=pipe)
            raw = await pipe.execute()
        verdicts: list[int] = []
        i = 0
        for c in commits:
            if c.transition is None:
                verdicts.append(COMMITTED)
                i += 2
            else:
                verdicts.append(int(raw[i]))
                i += 1
        return verdicts

    def _commit_args(self, c: Commit) -> tuple[list[str], list[Any]]:
        k, n, t = self.keys, c.partition, c.transition
        assert t is not None
        expect_key = k.state(n, t.expect[0]) if t.expect else k.deadlines(n)
        keys = [k.steps(n), k.done(n, c.root_id), k.deadlines(n), expect_key, k.outbox(n)]
        index = {key: i + 1 for i, key in enumerate(keys)}
        ops: list[Any] = []

        def op(name: str, key: str, a: Any = "", b: Any = "", cc: Any = "") -> None:
            if key not in index:
                keys.append(key)
                index[key] = len(keys)
            ops.extend((name, index[key], a, b, cc))

        if c.command_guard is not None:
            op("guardnx", k.command(n, c.command_guard), c.root_id, self.dedup_ttl_s)
        for digest, data in t.definitions.items():
            op("setex", k.definition(n, digest), data, self.state_ttl_s + 600)
        for state in t.writes:
            op("state", k.state(n, state.execId), state.version, state_encoder.encode(state),
               self.state_ttl_s)
        for step in t.steps:
            op("step", k.steps(n), state_encoder.encode(step))
        for emit in t.emits:
            op("xadd", k.outbox(n), emit.kind, emit.key, emit.data)
        for entry in t.log:
            op("log", k.events(n, entry.execId), state_encoder.encode(entry), self.state_ttl_s)
        if c.deadline is not None:
            op("zadd", k.deadlines(n), c.deadline[0], c.deadline[1])
        args = [STEPS_GROUP, c.ack_id or "", str(t.expect[1]) if t.expect else "",
                "1" if t.finishes_root else "0", c.root_id, self.dedup_ttl_s, *ops]
        return keys, args

    async def publish_once(self, items: list[Publish]) -> list[int]:
        if not items:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for p in items:
                await self._publish(keys=[p.stream, p.marker],
                                    args=[p.data, self.marker_ttl_s, p.maxlen], client=pipe)
            return [int(x) for x in await pipe.execute()]
