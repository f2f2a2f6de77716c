"""Advance executions: one batch of step entries from one partition at a time.

The batch is read with one XREADGROUP, its states with one pipelined read,
its blocks run concurrently, and its transitions commit in one pipeline of
Lua scripts, each atomic with the ack of its own step entry.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import msgspec
import structlog
from redis.exceptions import RedisError

from runtime import errors
from runtime.blocks.runner import BlockRunner, Unsupported
from runtime.definitions import DefinitionCache
from runtime.errors import ToolFailure
from runtime.machine import Machine
from runtime.outcome import SpawnChild
from runtime.state import ExecState, StepMsg, Transition, step_decoder

from . import metrics
from .logging import bound_execution
from .store import Commit, Store

log = structlog.get_logger("chatflow.steps")

Entry = tuple[bytes, dict[bytes, bytes]]


def now_ms() -> int:
    return int(time.time() * 1000)


class StepProcessor:
    def __init__(self, store: Store, machine: Machine, runner: BlockRunner,
                 definitions: DefinitionCache, clock: Callable[[], int] = now_ms) -> None:
        self.store = store
        self.machine = machine
        self.runner = runner
        self.definitions = definitions
        self.clock = clock
        self.steps_done = 0

    async def process(self, partition: int, entries: list[Entry]) -> None:
        msgs: list[tuple[bytes, StepMsg]] = []
        commits: list[Commit] = []
        for entry_id, fields in entries:
            try:
                msgs.append((entry_id, step_decoder.decode(fields[b"d"])))
            except (KeyError, msgspec.DecodeError):
                # Only the runtime writes step entries; a bad one is dropped, loudly.
                log.error("step entry undecodable; dropped", entry=entry_id, partition=partition)
                commits.append(Commit(partition, "", None, entry_id))
        states = await self.store.load_states([(partition, m.e) for _, m in msgs])
        await self._ensure_definitions(partition, [s for s in states if s is not None])
        results = await asyncio.gather(*(self._advance(m, s) for (_, m), s in zip(msgs, states,
                                                                                  strict=True)))
        for (entry_id, msg), state, transition in zip(msgs, states, results, strict=True):
            root = state.rootId if state else msg.e.split(".", 1)[0]
            commits.append(Commit(partition, root, transition, entry_id))
        metrics.observe_commits(commits, await self.store.commit(commits))
        self.steps_done += len(entries)

    async def _ensure_definitions(self, partition: int, states: list[ExecState]) -> None:
        missing = sorted({s.defHash for s in states
                          if s.defHash and self.definitions.get(s.defHash) is None})
        blobs = await self.store.load_definitions([(partition, d) for d in missing])
        for digest, blob in zip(missing, blobs, strict=True):
            if blob is not None:
                self.definitions.by_hash(digest, blob)

    async def _advance(self, msg: StepMsg, state: ExecState | None) -> Transition | None:
        with bound_execution(state):  # command/execution/tool/contact ids on every log line
            return await self._advance_bound(msg, state)

    async def _advance_bound(self, msg: StepMsg, state: ExecState | None) -> Transition | None:
        """The transition for one step, or None when the entry is stale (ack only)."""
        if state is None or state.status == "done" or state.version != msg.v:
            return None
        published = self.definitions.get(state.defHash)
        if published is None:
            return self.machine.abort(state, errors.internal_error(
                f"definition {state.defHash} of {state.publishedToolId} is gone"), self.clock())
        definition = published.definition
        try:
            if msg.k == "resume":
                if state.status != "waiting" or msg.child is None:
                    return None
                return self.machine.after_child(state, definition, msg.child, self.clock())
            if state.status != "running":
                return None
            planned = self.machine.plan(state, definition, self.clock())
            if isinstance(planned, Transition):
                return planned
            return await self._run_block(state, planned)
        except ToolFailure as failure:
            return self.machine.abort(state, failure, self.clock())
        except RedisError:
            raise  # left pending: the entry is reclaimed and retried
        except Exception as exc:  # a bug must still end the tree with exactly one answer
            log.exception("step crashed; execution aborted", exec_id=state.execId)
            return self.machine.abort(state, errors.internal_error(type(exc).__name__),
                                      self.clock())

    async def _run_block(self, state: ExecState, block: Any) -> Transition:
        outcome = await self.runner.run(state, block, self.clock())
        now = self.clock()
        if isinstance(outcome, SpawnChild):
            return self.machine.spawn(state, block, outcome, now)
        if isinstance(outcome, Unsupported):
            return self.machine.fail(state, outcome, now)
        if isinstance(outcome, ToolFailure):
            return self.machine.load_failure(state, block, outcome, now)
        return self.machine.after_block(state, block, outcome, now)
