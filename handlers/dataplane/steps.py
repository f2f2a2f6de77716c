"""Advance executions: one batch of step entries from one partition at a time.

The batch is read with one XREADGROUP, its states with one pipelined read,
its blocks run concurrently, and its transitions commit in one pipeline of
Lua scripts, each atomic with the ack of its own step entry.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, cast

import msgspec
import structlog
from redis.exceptions import RedisError

from chatflow.runtime import errors
from chatflow.runtime.blocks.runner import BlockRunner
from chatflow.runtime.definitions import DefinitionCache
from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.interpolation import RenderTooLarge
from chatflow.runtime.machine import Machine
from chatflow.runtime.outbound import (
    enter_sending_while,
    enter_traced,
    leave_sending_while,
    leave_traced,
)
from chatflow.runtime.outcome import BlockOutcome
from chatflow.runtime.runahead import RunAhead
from chatflow.runtime.state import Attempt, ExecState, StepMsg, Transition, step_decoder
from chatflow.schemas.definition import (
    CallAIBlock,
    CallEndpointBlock,
    CallToolBlock,
    FetchMediaBlock,
    HttpCallBlock,
    RunnableBlock,
    ToolDefinition,
)

from ..operations import metrics
from ..operations.logging import enter_execution, leave_execution
from ..redis_client import Entry
from .store import COMMITTED, Commit, Store

if TYPE_CHECKING:
    from ..operations.tracing import Tracing

log = structlog.get_logger("chatflow.steps")
# The blocks that call the outside world over HTTP: each run is an attempt
# (chatflow_http_attempts_total).
CALLS = frozenset({HttpCallBlock, CallEndpointBlock, FetchMediaBlock, CallAIBlock})


def now_ms() -> int:
    return int(time.time() * 1000)


class AnsweredChecks:
    """Whether trees are still unanswered, for requests about to be sent (every httpCall's,
    and the others' after a wait for a connection slot): every check asked while one read is
    in flight goes into the next read, one pipelined ``EXISTS`` per partition.

    Under a saturated gate every request waits, so a read per request was one Redis round
    trip (and, at a hundred in flight, a pool connection) per httpCall; coalesced, the same
    keys are read at the same moment (with the slot held, before the send), so the promise
    of docs/http.md holds unchanged. The httpCalls of one batch that find free slots ask in
    the same loop turn, so they share one read, as they did in the batch's own check."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._asked: list[tuple[int, str, asyncio.Future[bool]]] = []
        self._reader: asyncio.Task[None] | None = None

    async def unanswered(self, partition: int, root_id: str) -> bool:
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._asked.append((partition, root_id, answer))
        if self._reader is None or self._reader.done():
            # Started on the next loop turn, so the checks of requests released together
            # (their slots freed in one turn) share the read.
            self._reader = asyncio.create_task(self._read())
        return not await answer

    async def _read(self) -> None:
        asked: list[tuple[int, str, asyncio.Future[bool]]] = []
        try:
            while self._asked:
                asked, self._asked = self._asked, []
                by_partition: dict[int, list[tuple[str, asyncio.Future[bool]]]] = {}
                for partition, root_id, answer in asked:
                    by_partition.setdefault(partition, []).append((root_id, answer))
                try:
                    done = await asyncio.gather(*(
                        self.store.answered(p, [root for root, _ in items])
                        for p, items in by_partition.items()))
                except Exception as exc:  # a RedisError fails these requests' steps, as before
                    for _, _, answer in asked:
                        if not answer.done():
                            answer.set_exception(exc)
                    continue
                for items, flags in zip(by_partition.values(), done, strict=True):
                    for (_, answer), flag in zip(items, flags, strict=True):
                        if not answer.done():
                            answer.set_result(flag)
        finally:  # cancelled (the worker stops): nobody is left waiting on a read
            for _, _, answer in [*asked, *self._asked]:
                if not answer.done():
                    answer.cancel()
            self._asked = []


@dataclass(slots=True)
class Pending:
    """A block that must talk to the outside world before its transition is known;
    ``attempts``/``since``: a retry's step carried them (runtime/retry.py)."""

    state: ExecState
    block: RunnableBlock
    attempts: list[Attempt] | None = None
    since: int = 0


class StepProcessor:
    def __init__(self, store: Store, machine: Machine, runner: BlockRunner,
                 definitions: DefinitionCache, clock: Callable[[], int] = now_ms,
                 run_ahead_budget_ms: int = 3_000, tracing: Tracing | None = None,
                 on_delayed: Callable[[int, int], None] | None = None) -> None:
        """``on_delayed(partition, due_ms)``: told of every delayed step committed (a
        retry's wait), so the worker wakes when it is due (handlers/dataplane/delayed.py)."""
        self.store = store
        self.on_delayed = on_delayed
        self.machine = machine
        self.runner = runner
        self.definitions = definitions
        self.clock = clock
        self.steps_done = 0
        self.answered_checks = AnsweredChecks(store)
        self.tracing = tracing  # None while tracing is off
        # The one component that carries a hop's transitions on (the intake shares it).
        self.run_ahead = RunAhead(machine, self._definition, run_block=self._run_inert,
                                  load_states=self._load_states, clock=clock,
                                  budget_ms=run_ahead_budget_ms, run_blocks=self._run_inerts)

    async def process(self, partition: int, entries: list[Entry]) -> None:
        msgs: list[tuple[bytes, StepMsg]] = []
        dropped: list[Commit] = []
        for entry_id, fields in entries:
            try:
                msgs.append((entry_id, step_decoder.decode(fields[b"d"])))
            except (KeyError, msgspec.DecodeError):
                # Only the runtime writes step entries; a bad one is dropped, loudly.
                log.error("step entry undecodable; dropped", entry=entry_id, partition=partition)
                dropped.append(Commit(partition, "", None, entry_id))
        states = await self.store.load_states(
            [(partition, m.exec_id) for _, m in msgs],
            known=[m.state if m.state is not None and m.state.version == m.version else None
                   for _, m in msgs])
        await self._ensure_definitions(partition, [s for s in states if s is not None])
        # Decide synchronously what needs no I/O (returns, resumes, guardrails); blocks that
        # talk to the outside run as tasks. What is known commits in waves, as soon as it is
        # known: one slow endpoint must not hold the other entries of its batch.
        results: list[Transition | Pending | None] = [
            self._decide(m, s) for (_, m), s in zip(msgs, states, strict=True)]
        await self._drop_answered(partition, results)
        running = {asyncio.create_task(self._run_bound(r)): i
                   for i, r in enumerate(results) if isinstance(r, Pending)}
        wave = [i for i, r in enumerate(results) if not isinstance(r, Pending)]
        try:
            while True:
                if running and not wave:
                    await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in [t for t in running if t.done()]:
                    i = running.pop(task)
                    results[i] = task.result()  # a RedisError leaves the rest pending
                    wave.append(i)
                await self._commit_wave(partition, [(msgs[i], states[i], results[i])
                                                    for i in wave], dropped)
                wave, dropped = [], []
                if not running:
                    break
        finally:
            for task in running:  # only after an error: their entries are reclaimed
                task.cancel()
        self.steps_done += len(entries)

    async def _drop_answered(self, partition: int,
                             results: list[Transition | Pending | None]) -> None:
        """A block with side effects runs only while its tree is unanswered. The version
        check cannot tell: the state inlined in a step entry is the one its step expects,
        while a cancel or the deadline reaper answered the tree after it was written. The
        tree's done key can: a Pending whose tree is done becomes a bare ack.

        Not an httpCall: its one side effect is its request, and the Outbound reads the
        done key once the request holds a connection slot, just before it is sent (see
        ``_run_bound``). Read here too, a request that then waited for a slot (every one,
        under load) paid for two reads."""
        waiting = [i for i, r in enumerate(results)
                   if isinstance(r, Pending) and not isinstance(r.block, HttpCallBlock)]
        if not waiting:
            return
        roots = [cast(Pending, results[i]).state.rootId for i in waiting]
        for i, done in zip(waiting, await self.store.answered(partition, roots), strict=True):
            if done:
                results[i] = None

    async def _commit_wave(self, partition: int,
                           decided: list[tuple[tuple[bytes, StepMsg], ExecState | None,
                                               Transition | Pending | None]],
                           commits: list[Commit]) -> None:
        results: list[Transition | None] = []
        for _, _, result in decided:
            assert not isinstance(result, Pending)
            results.append(result)
        carried = await self.run_ahead.carry(partition, results)
        for ((entry_id, msg), state, _), transition in zip(decided, carried, strict=True):
            root = state.rootId if state else msg.exec_id.split(".", 1)[0]
            commits.append(Commit(partition, root, transition, entry_id))
        verdicts = await self.store.commit(commits)
        metrics.observe_commits(commits, verdicts, self.tracing)
        if self.on_delayed is not None:
            for commit, verdict in zip(commits, verdicts, strict=True):
                t = commit.transition
                if t is not None and t.delayed and verdict == COMMITTED:
                    for due, _step in t.delayed:
                        self.on_delayed(partition, due)

    async def _run_inert(self, state: ExecState, block: RunnableBlock) -> Transition:
        """An inert block (runtime/runahead.py: a script, a callTool) sends no outbound
        request, so it sets no still-wanted check (``_run_bound``'s)."""
        token = enter_execution(state)
        try:
            return await self._run_block(state, block)
        except Exception as exc:
            return self._crashed(state, exc)
        finally:
            leave_execution(token)

    async def _run_inerts(self, items: list[tuple[ExecState, RunnableBlock]]) -> list[Transition]:
        """One run-ahead round: every callTool's child read in one round trip, then those
        blocks decided in place (no I/O left: no task each); scripts run concurrently."""
        results: list[Transition | None] = [None] * len(items)
        calls = [i for i, (_, block) in enumerate(items) if isinstance(block, CallToolBlock)]
        if calls:
            wanted = list(dict.fromkeys(
                cast(CallToolBlock, items[i][1]).publishedToolId for i in calls))
            # Through the store's coalescer: the run-ahead of every partition of an intake
            # batch reads its children in this same turn, so they share one round trip.
            raws = await asyncio.gather(*(self.store.get_tool(pt) for pt in wanted))
            children = dict(zip(wanted, raws, strict=True))
            for i in calls:
                state, block = items[i]
                results[i] = self._call_tool(state, cast(CallToolBlock, block),
                                             children[cast(CallToolBlock, block).publishedToolId])
        rest = [i for i in range(len(items)) if results[i] is None]
        if len(rest) == 1:
            results[rest[0]] = await self._run_inert(*items[rest[0]])
        elif rest:
            done = await asyncio.gather(*(self._run_inert(*items[i]) for i in rest))
            for i, t in zip(rest, done, strict=True):
                results[i] = t
        return cast(list[Transition], results)

    def _call_tool(self, state: ExecState, block: CallToolBlock, raw: bytes | None) -> Transition:
        token = enter_execution(state)
        try:
            now = self.clock()
            return self.machine.after_run(state, block, self.runner.call_tool(state, block, raw),
                                          now)
        except Exception as exc:
            return self._crashed(state, exc)
        finally:
            leave_execution(token)

    async def _load_states(self, partition: int, wanted: list[tuple[str, ExecState | None]]
                           ) -> list[ExecState | None]:
        """Run-ahead's parents: the ones it holds, the others in one pipelined read."""
        states = await self.store.load_states([(partition, e) for e, _ in wanted],
                                              known=[known for _, known in wanted])
        await self._ensure_definitions(partition, [s for s in states if s is not None])
        return states

    def _definition(self, digest: str) -> ToolDefinition | None:
        published = self.definitions.get(digest)
        return published.definition if published else None

    async def _ensure_definitions(self, partition: int, states: list[ExecState]) -> None:
        missing = sorted({s.defHash for s in states
                          if s.defHash and self.definitions.get(s.defHash) is None})
        blobs = await self.store.load_definitions([(partition, d) for d in missing])
        for digest, blob in zip(missing, blobs, strict=True):
            if blob is not None:
                self.definitions.by_hash(digest, blob)

    def _decide(self, msg: StepMsg, state: ExecState | None) -> Transition | Pending | None:
        # command/execution/tool/contact ids on every log line (a token pair: once per entry)
        token = enter_execution(state)
        try:
            return self._decide_bound(msg, state)
        finally:
            leave_execution(token)

    async def _run_bound(self, item: Pending) -> Transition:
        # A request checks its tree before it is sent (runtime/outbound.py): an httpCall's
        # request always (once it holds a connection slot: _drop_answered skipped it), the
        # requests of other blocks only after a wait for a slot (the check in
        # _drop_answered came before it).
        # Token pairs, not ``with`` blocks: two generator context managers and a closure per
        # block cost more than the ContextVar calls they wrap (one task per block, every
        # httpCall); the check is a partial, built without a closure or an extra coroutine.
        state = item.state
        logged = enter_execution(state)
        sending = enter_sending_while(
            partial(self.answered_checks.unanswered, state.partition, state.rootId),
            always=isinstance(item.block, HttpCallBlock))
        # Tracing on: the block's requests carry its own span's traceparent (runtime/outbound.py).
        traced = None if self.tracing is None else enter_traced(self.tracing.visit_headers(state))
        try:
            return await self._run_block(state, item.block, item.attempts, item.since)
        except Exception as exc:
            return self._crashed(state, exc)
        finally:
            if traced is not None:
                leave_traced(traced)
            leave_sending_while(sending)
            leave_execution(logged)

    def _crashed(self, state: ExecState, exc: Exception) -> Transition:
        if isinstance(exc, RenderTooLarge):  # e.g. a return value past the cap
            exc = errors.render_too_large(exc)
        if isinstance(exc, ToolFailure):
            return self.machine.abort(state, exc, self.clock())
        if isinstance(exc, RedisError):
            raise exc  # left pending: the entry is reclaimed and retried
        # A bug must still end the tree with exactly one answer.
        log.error("step crashed; execution aborted", exec_id=state.execId, exc_info=exc)
        return self.machine.abort(state, errors.internal_error(type(exc).__name__), self.clock())

    def _decide_bound(self, msg: StepMsg, state: ExecState | None) -> Transition | Pending | None:
        """The transition for one step, a block to run, or None when the entry is stale."""
        if state is None or state.status == "done" or state.version != msg.version:
            return None
        published = self.definitions.get(state.defHash)
        if published is None:
            return self.machine.abort(state, errors.internal_error(
                f"definition {state.defHash} of {state.publishedToolId} is gone"), self.clock())
        definition = published.definition
        try:
            if msg.kind == "resume":
                if state.status != "waiting" or msg.child is None:
                    return None
                return self.machine.after_child(state, definition, msg.child, self.clock())
            if state.status != "running":
                return None
            planned = self.machine.plan(state, definition, self.clock())
            if isinstance(planned, Transition):
                return planned
            return Pending(state, planned, msg.attempts, msg.since)
        except Exception as exc:
            return self._crashed(state, exc)

    async def _run_block(self, state: ExecState, block: RunnableBlock,
                         attempts: list[Attempt] | None = None, since: int = 0) -> Transition:
        result = await self.runner.run(state, block, self.clock())
        t = self.machine.after_run(state, block, result, self.clock(), attempts, since)
        if type(block) in CALLS and isinstance(result, BlockOutcome):
            metrics.http_attempt(state.publishedToolId, "retried" if t.delayed else
                                 "ok" if result.error is None else "failed")
        return t
