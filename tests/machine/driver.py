"""An in-memory driver of the pure state machine: no Redis, no worker, no I/O.

It plays the worker's part the way handlers/dataplane/steps.py does (apply a transition only when the
version it expects is the stored one, drop every commit of a tree once it answered, settle
each transition, run callTool children) and lets the test decide each I/O block's outcome.
With ``run_ahead`` it carries each transition on as the worker does (runtime/runahead.py:
inert blocks in the same hop, waiting parents resumed inline); without, it only settles.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from chatflow.runtime.errors import ToolFailure, tool_not_published
from chatflow.runtime.interpolation import render
from chatflow.runtime.machine import Machine
from chatflow.runtime.outcome import BlockOutcome, SpawnChild
from chatflow.runtime.runahead import RunAhead
from chatflow.runtime.state import Attempt, ExecState, LogEntry, StepMsg, Transition
from chatflow.schemas.definition import CallToolBlock, PublishedTool, RunnableBlock, ToolDefinition
from chatflow.schemas.wire import ExecuteToolCommand, ToolResult

Outcomes = Callable[[ExecState, Any], BlockOutcome]
ROOT = "0-root"


def command(pt: str, inputs: dict[str, str] | None = None,
            variables: dict[str, Any] | None = None) -> ExecuteToolCommand:
    return msgspec.convert({
        "commandId": "cmd-1",
        "action": {"id": "act-1", "type": "executeTool", "toolId": f"t-{pt}", "publishedToolId": pt,
                   "outputVariable": "out",
                   "inputVariables": [{"name": k, "value": v} for k, v in (inputs or {}).items()]},
        "context": {"contactId": "c-1", "variables": variables or {}},
    }, ExecuteToolCommand)


def _copy(state: ExecState) -> ExecState:
    """What a read from the store gives: a state of its own, shared with no transition."""
    return msgspec.json.decode(msgspec.json.encode(state), type=ExecState)


@dataclass
class Run:
    """Everything a drive produced, in order."""

    results: list[ToolResult] = field(default_factory=list)
    log: list[LogEntry] = field(default_factory=list)
    versions: dict[str, list[int]] = field(default_factory=dict)  # every committed version
    states: dict[str, ExecState] = field(default_factory=dict)
    transitions: int = 0
    dropped: int = 0
    committed: list[bytes] = field(default_factory=list)  # every transition handed to commit
    delayed: list[int] = field(default_factory=list)  # when each delayed step was due

    @property
    def result(self) -> ToolResult:
        (only,) = self.results
        return only


@dataclass
class Driver:
    tools: dict[str, dict[str, Any]]
    outcomes: Outcomes = field(default=lambda _s, _b: BlockOutcome())
    machine: Machine = field(default_factory=Machine)
    now: int = 1_000
    tick_ms: int = 1  # how far the clock moves per step
    run_ahead: bool = False
    block_ms: int = 0  # how far the clock moves while a block runs (a deadline can pass mid-hop)
    ahead: Callable[..., Any] = RunAhead  # the run-ahead to drive (tests compare two)

    def definition(self, def_hash: str) -> ToolDefinition | None:
        raw = self.tools.get(def_hash)
        return None if raw is None else ToolDefinition.model_validate(raw)

    def published(self, pt: str) -> PublishedTool | None:
        raw = self.tools.get(pt)
        return None if raw is None else PublishedTool(id=pt, toolId=f"t-{pt}", definition=raw)

    def run(self, cmd: ExecuteToolCommand) -> Run:
        return asyncio.run(self._run(cmd))

    async def _run(self, cmd: ExecuteToolCommand) -> Run:
        run = Run()

        async def load(_partition: int, wanted: list[tuple[str, ExecState | None]]
                       ) -> list[ExecState | None]:
            stored = [known or run.states.get(exec_id) for exec_id, known in wanted]
            return [None if s is None else _copy(s) for s in stored]

        ahead = self.ahead(self.machine, self.definition, clock=lambda: self.now,
                         run_block=self._run_block if self.run_ahead else None,
                         load_states=load, budget_ms=2**40)

        async def hop(t: Transition) -> Transition:
            if not self.run_ahead:
                return ahead.settle(t, self.now)
            (carried,) = await ahead.carry(0, [t])
            assert carried is not None
            return carried

        published = self.published(cmd.action.publishedToolId) or tool_not_published(
            cmd.action.publishedToolId)
        first = self.machine.start(cmd, published, cmd.action.publishedToolId, b"", exec_id=ROOT,
                                   partition=0, now=self.now, debug=False)
        queue: deque[StepMsg] = deque()
        self._apply(run, await hop(first), queue)
        while queue:
            step = queue.popleft()
            self.now += self.tick_ms
            if step.attempts is not None:  # a retry's step: it ran once it was due
                self.now = max(self.now, run.delayed[-1])
            stored = run.states.get(step.exec_id)
            if stored is None or stored.version != step.version:
                run.dropped += 1
                continue
            self._apply(run, await hop(await self._step(_copy(stored), step)), queue)
        return run

    async def _step(self, state: ExecState, step: StepMsg) -> Transition:
        definition = self.definition(state.defHash)
        assert definition is not None
        if step.kind == "resume":
            assert step.child is not None
            return self.machine.after_child(state, definition, step.child, self.now)
        planned = self.machine.plan(state, definition, self.now)
        if isinstance(planned, Transition):
            return planned
        return await self._run_block(state, planned, step.attempts, step.since)

    async def _run_block(self, state: ExecState, block: RunnableBlock,
                         attempts: list[Attempt] | None = None, since: int = 0) -> Transition:
        self.now += self.block_ms
        return self.machine.after_run(state, block, self._result(state, block), self.now,
                                      attempts, since)

    def _result(self, state: ExecState, block: RunnableBlock
                ) -> BlockOutcome | SpawnChild | ToolFailure:
        """What the block runner would give: a callTool's child (or the failure to load
        it); any other block's outcome is the test's."""
        if not isinstance(block, CallToolBlock):
            return self.outcomes(state, block)
        child = self.published(block.publishedToolId)
        if child is None:
            return tool_not_published(block.publishedToolId)
        inputs = {m.name: render(m.value, state.variables, state.context)
                  for m in block.inputVariables}
        return SpawnChild(child, block.publishedToolId, b"", inputs)

    def _apply(self, run: Run, t: Transition, queue: deque[StepMsg]) -> None:
        """One atomic commit: the expected versions must hold and the tree must not have
        answered; then states, steps, results and log entries land together."""
        run.transitions += 1
        run.committed.append(msgspec.json.encode(t))
        expects = ([t.expect] if t.expect else []) + list(t.also_expect)
        stale = any(run.states[e].version != v for e, v in expects if e in run.states)
        if stale or run.results:  # a version moved on, or the tree answered (the done key)
            run.dropped += 1
            return
        for state in t.writes:
            run.states[state.execId] = _copy(state)
            run.versions.setdefault(state.execId, []).append(state.version)
        for emit in t.emits:
            if emit.kind == "result":
                run.results.append(msgspec.json.decode(emit.data, type=ToolResult))
        run.log.extend(t.log)
        queue.extend(t.steps)
        for due, step in t.delayed:  # held until due: the loop's clock jumps there
            run.delayed.append(due)
            queue.append(step)
