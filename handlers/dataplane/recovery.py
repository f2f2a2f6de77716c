"""Recovery: reclaim what dead workers left pending, and answer expired deadlines.

Every worker runs these loops; they are idempotent, so several may race.
Pending entries idle for ``claim_idle_ms`` are claimed with XPENDING + XCLAIM
(XPENDING gives the delivery count, which XAUTOCLAIM does not) and go through
the same processors as fresh entries. A live worker renews the leases of what it
works on (handlers/dataplane/leases.py), so only a dead or stuck worker's entries get that
idle; entries this worker still holds are never taken again by it. An entry delivered ``max_deliveries``
times is a poison message: it goes to the dead-letter stream, and the
execution it belonged to is answered with an internal error.

Idle, the loops must cost next to nothing whatever the number of partitions: each pass
starts with ONE probe (a read-only script over every stream or deadline set; one per hash
slot on a cluster) and looks further only where the probe found work. The same pass removes
consumers gone for a claim window with nothing pending (dead workers' names would otherwise
stay in XINFO for ever).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import structlog

from chatflow.runtime import errors
from chatflow.runtime.machine import Machine
from chatflow.runtime.state import step_decoder

from ..keys import Keys
from ..operations import metrics
from ..redis_client import Entry
from ..settings import Settings
from .intake import ack_and_delete
from .leases import Leases
from .store import Store, dead_letter
from .trees import End, end_trees

log = structlog.get_logger("chatflow.recovery")

# For each key: a stream's pending count in group ARGV[i + 1] (-1: stream or group missing),
# or, where that argument is empty, the number of deadlines of a set due by ARGV[1].
# pcall: one missing group must not hide the others.
PROBE = """
local out = {}
for i = 1, #KEYS do
  local group = ARGV[i + 1]
  local r
  if group ~= '' then
    r = redis.pcall('XPENDING', KEYS[i], group)
    if type(r) == 'table' and r.err then out[i] = -1 else out[i] = r[1] end
  else
    r = redis.pcall('ZCOUNT', KEYS[i], '-inf', ARGV[1])
    if type(r) == 'table' and r.err then out[i] = -1 else out[i] = r end
  end
end
return out
"""
# Delete the consumers idle longer than ARGV[1] ms with nothing pending. In one script so the
# check and the delete are atomic: a consumer that read an entry in between would lose it
# from the pending list (DELCONSUMER drops a consumer's pending entries).
FORGET = """
local removed = {}
for i = 1, #KEYS do
  local group = ARGV[i + 2]
  local consumers = redis.pcall('XINFO', 'CONSUMERS', KEYS[i], group)
  if type(consumers) == 'table' and not consumers.err then
    for _, c in ipairs(consumers) do
      local f = {}
      for j = 1, #c, 2 do f[c[j]] = c[j + 1] end
      if f['pending'] == 0 and f['idle'] > tonumber(ARGV[1]) and f['name'] ~= ARGV[2] then
        redis.call('XGROUP', 'DELCONSUMER', KEYS[i], group, f['name'])
        removed[#removed + 1] = f['name']
      end
    end
  end
end
return removed
"""
OWN_STREAMS = frozenset({"commands", "steps", "outbox"})  # read by the runtime's groups alone


class Recovery:
    def __init__(self, store: Store, machine: Machine, settings: Settings, consumer: str,
                 leases: Leases | None = None) -> None:
        self.store = store
        self.keys: Keys = store.keys
        self.machine = machine
        self.settings = settings
        self.consumer = consumer
        self.leases = leases
        self.reaped = 0
        self.reclaimed = 0
        self.dead_lettered = 0
        self._forgot_at = -float("inf")

    async def _run(self, script: str, keys: list[str], head: list[str | int],
                   per_key: list[str]) -> list[Any]:
        """``script``'s replies over ``keys`` (key i with argument ``per_key[i]``, after the
        ``head`` arguments), concatenated: in one call on a single node, whatever the number
        of partitions; one per key on a cluster (a script must not cross hash slots)."""
        client = self.store.client
        if not keys:
            return []
        if not self.settings.redis_cluster:
            return list(await client.eval(script, len(keys), *keys, *head, *per_key))
        out: list[Any] = []
        for key, arg in zip(keys, per_key, strict=True):
            out += await client.eval(script, 1, key, *head, arg)
        return out

    async def pending_counts(self, streams: list[tuple[str, str]]) -> list[int]:
        """Each ``(stream, group)``'s number of pending entries; -1 if the group is missing."""
        now = int(time.time() * 1000)
        counts = await self._run(PROBE, [s for s, _ in streams], [now], [g for _, g in streams])
        return [int(c) for c in counts]

    async def due_work(self) -> tuple[list[int], list[int]]:
        """The partitions with a deadline that has passed, and those with a delayed step
        (a retry's, handlers/dataplane/delayed.py) that is due: one probe for both."""
        now = int(time.time() * 1000)
        parts = range(self.keys.partitions)
        sets = [self.keys.deadlines(n) for n in parts] + [self.keys.delayed(n) for n in parts]
        counts = await self._run(PROBE, sets, [now], [""] * len(sets))
        size = self.keys.partitions
        return ([n for n, c in enumerate(counts[:size]) if int(c) > 0],
                [n for n, c in enumerate(counts[size:]) if int(c) > 0])

    async def forget_idle_consumers(self, streams: list[tuple[str, str]]) -> int:
        """Remove consumers idle past the claim window with nothing pending, at most once
        per claim window (the live readers read at least twice in one)."""
        now = time.monotonic()
        if now - self._forgot_at < self.settings.claim_idle_ms / 1000:
            return 0
        self._forgot_at = now
        removed = await self._run(FORGET, [s for s, _ in streams],
                                  [self.settings.claim_idle_ms, self.consumer],
                                  [g for _, g in streams])
        names = sorted({n.decode() if isinstance(n, bytes) else str(n) for n in removed})
        if names:
            log.info("removed consumers idle past the claim window with nothing pending",
                     consumers=names[:10], count=len(names))
            metrics.reaper_action("consumer_removed", len(names))
        return len(names)

    async def reap_deadlines(self, partition: int) -> int:
        now = int(time.time() * 1000)
        due = await self.store.client.zrangebyscore(self.keys.deadlines(partition), "-inf", now,
                                                    start=0, num=100)
        if not due:
            return 0
        ids = [d.decode() for d in due]
        states = await self.store.load_states([(partition, i) for i in ids])
        ends: list[End] = []
        for exec_id, state in zip(ids, states, strict=True):
            if state is None:
                await self.store.client.zrem(self.keys.deadlines(partition), exec_id)
                continue
            failure = errors.tool_timeout(state.root.action.publishedToolId,
                                          self.machine.limits.tool_timeout_ms)
            ends.append(End(partition, state, failure, "deadline_timeout"))
        ended = sum(1 for e in await end_trees(self.store, self.machine, ends, now) if e.committed)
        metrics.reaper_action("deadline_timeout", ended)
        self.reaped += ended
        return len(ends)

    async def reclaim(self, stream: str, group: str, partition: int,
                      process: Callable[[list[Entry]], Awaitable[None]],
                      kind: str) -> int:
        client = self.store.client
        pending = await client.xpending_range(stream, group, min="-", max="+",
                                              count=self.settings.batch_size,
                                              idle=self.settings.claim_idle_ms)
        if self.leases is not None:  # ours, and still running here: a lapsed renewal, not a death
            held = self.leases.holds(stream, group)
            pending = [p for p in pending if p["message_id"] not in held]
        if not pending:
            return 0
        ids = [p["message_id"] for p in pending]
        counts = {p["message_id"]: p["times_delivered"] for p in pending}
        claimed: list[Entry] = await client.xclaim(stream, group, self.consumer,
                                                   self.settings.claim_idle_ms, ids)
        fresh = [e for e in claimed if e[1] and counts.get(e[0], 0) < self.settings.max_deliveries]
        poison = [e for e in claimed if e[1] and counts.get(e[0], 0) >= self.settings.max_deliveries]
        if fresh:
            log.info("reclaimed pending entries", stream=stream, count=len(fresh))
            await process(fresh)
            self.reclaimed += len(fresh)
            metrics.reaper_action(f"reclaimed_{kind}", len(fresh))
        for entry in poison:
            await self._poison(stream, group, partition, entry, counts[entry[0]], kind)
        return len(claimed)

    async def _poison(self, stream: str, group: str, partition: int, entry: Entry,
                      deliveries: int, kind: str) -> None:
        entry_id, fields = entry
        reason = f"delivered {deliveries} times without completing"
        await self.store.publish_once([dead_letter(self.keys, stream, entry_id, fields, reason,
                                                   deliveries, self.settings.dead_letters_maxlen)])
        log.error("poison entry dead-lettered", stream=stream, entry=entry_id.decode(),
                  deliveries=deliveries)
        self.dead_lettered += 1
        metrics.dead_letter(kind)
        if kind == "steps":
            await self._abort_step_owner(partition, fields)
        if kind in OWN_STREAMS:
            await ack_and_delete(self.store.client, stream, group, [entry_id])
        else:  # stream:tool-executions is public: other groups may still read the entry
            await self.store.client.xack(stream, group, entry_id)

    async def _abort_step_owner(self, partition: int, fields: dict[bytes, bytes]) -> None:
        try:
            msg = step_decoder.decode(fields[b"d"])
        except (KeyError, msgspec.DecodeError):
            return
        (state,) = await self.store.load_states([(partition, msg.exec_id)])
        if state is None or state.status == "done":
            return
        failure = errors.internal_error("step kept failing; dead-lettered")
        await end_trees(self.store, self.machine, [End(partition, state, failure, "dead_lettered")])
