"""Run a tool in this process, without streams: the builder's test routes, saved test cases
and the internal execute route.

The same state machine and block executors as the workers, driven by a local
queue instead of the step streams; the trace is the executions' event log. A run of a
saved test case passes its ``mocks``: those blocks are answered by the mock layer
(``handlers.registry.mocking``) and reach nothing outside.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import json
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import msgspec

from chatflow.runtime.blocks.ai import register_media_and_ai
from chatflow.runtime.blocks.endpoint import CallEndpointExecutor
from chatflow.runtime.blocks.mocks import MockOutbound
from chatflow.runtime.blocks.runner import BlockRunner, Executor, Result
from chatflow.runtime.definitions import DefinitionCache
from chatflow.runtime.edge import Edge
from chatflow.runtime.errors import ToolFailure, internal_error
from chatflow.runtime.machine import Machine
from chatflow.runtime.outbound import Outbound
from chatflow.runtime.runahead import RunAhead
from chatflow.runtime.sandbox import ScriptLimits, ScriptSandbox
from chatflow.runtime.state import Attempt, ExecState, LogEntry, StepMsg, Transition
from chatflow.schemas.definition import PublishedTool, RunnableBlock, ToolDefinition
from chatflow.schemas.wire import ExecuteToolCommand, ToolResult
from chatflow_agent.runtime_client import RESULT

from ..dataplane.edge import SharedGate
from ..dataplane.store import Store
from ..keys import Keys
from ..redis_client import Client
from ..settings import Settings
from .mocking import MockedBlocks
from .scope import Grant


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class InlineRun:
    result: ToolResult | None = None
    trace: list[LogEntry] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    executions: list[bytes] = field(default_factory=list)
    execution_id: str = ""
    definition: tuple[str, bytes] = ("", b"")  # (content hash, PublishedTool JSON) it ran
    mocks_used: set[str] = field(default_factory=set)  # the mocks a block took

    def body(self) -> dict[str, Any]:
        r = self.result
        error = {"code": r.error.code, "message": r.error.message} if r and r.error else None
        return {"ok": bool(r and r.ok), "result": r.result if r else "", "error": error,
                "durationMs": r.durationMs if r else 0, "variables": self.variables,
                "executionId": self.execution_id, "trace": msgspec.to_builtins(self.trace)}


class InlineRunner:
    def __init__(self, settings: Settings, client: Client, keys: Keys, http: Outbound,
                 extra_executors: dict[str, Executor] | None = None) -> None:
        self.settings = settings
        self.keys = keys
        self.client = client
        self.store = Store(client, keys, state_ttl_s=settings.state_ttl_s,
                           dedup_ttl_s=settings.dedup_ttl_s, marker_ttl_s=settings.marker_ttl_s)
        self.machine = Machine(settings.limits())
        self.definitions = DefinitionCache()
        self.sandbox = ScriptSandbox(ScriptLimits(
            timeout_ms=settings.script_timeout_ms,
            max_memory_bytes=settings.script_max_memory_mb << 20), lanes=settings.script_lanes or None,
            child_env=settings.sandbox_env())
        self.extra_executors = extra_executors or {}
        # Test runs are held to the same limits and circuits as the workers' runs; a test
        # case's mocked blocks reach no upstream, so none is held for them.
        self.gate = SharedGate(client, keys, lease_ms=settings.claim_idle_ms)
        self.runner = self._block_runner(http, self.gate)
        self.mocked = self._block_runner(MockOutbound())  # test cases' mocked blocks only

    def _block_runner(self, http: Outbound, gate: SharedGate | None = None) -> BlockRunner:
        edge = Edge(gate, self.settings.origins()) if gate is not None else None
        runner = BlockRunner(http=http, sandbox=self.sandbox, tools=self.store,
                             definitions=self.definitions, limits=self.machine.limits,
                             script_timeout_ms=self.settings.script_timeout_ms, edge=edge)
        runner.register("callEndpoint",
                        CallEndpointExecutor(http, self.store, self.machine.limits, gate))
        # The same executors as the workers, so test runs behave like real ones.
        register_media_and_ai(runner, self.store, self.settings.media_config(),
                              self.settings.ai_config())
        for kind, executor in self.extra_executors.items():
            runner.register(kind, executor)
        return runner

    def close(self) -> None:
        self.sandbox.close()

    async def aclose(self) -> None:
        """``close``, then wait until the sandbox's worker processes are gone (a command's
        event loop must not end with them still running)."""
        await self.sandbox.aclose()

    async def run(self, published: PublishedTool | ToolFailure, *, grant: Grant,
                  inputs: dict[str, Any], variables: dict[str, Any],
                  start_block: str | None = None, contact: str = "inline",
                  mocks: dict[str, Any] | None = None) -> InlineRun:
        """Run ``published`` to its answer. The tree runs in ``grant``'s workspace, whatever
        the record says: its blocks resolve servers, credentials and tools there.
        ``mocks``: a saved test case's answers (``handlers.registry.mocking``)."""
        pt = published.id if isinstance(published, PublishedTool) else "inline"
        digest, data = "", b""
        if isinstance(published, PublishedTool):
            update: dict[str, Any] = {"workspace": grant.workspace}
            if start_block:
                update["definition"] = published.definition.model_copy(
                    update={"onboardingBlockId": start_block})
            published = published.model_copy(update=update)
            data = published.model_dump_json(by_alias=True).encode()
            digest = hashlib.sha1(data, usedforsecurity=False).hexdigest()
            self.definitions.put(digest, published)
            pt = published.id
        cmd = msgspec.convert({
            "commandId": f"inline-{uuid.uuid4().hex[:12]}",
            "action": {"id": "inline", "type": "executeTool", "publishedToolId": pt,
                       "toolId": getattr(published, "toolId", pt), "outputVariable": "result"},
            "context": {"contactId": contact, "variables": variables},
        }, ExecuteToolCommand)
        # Partition 0 by the id's form, unique so the run history can keep each test run.
        exec_id = f"0-test{uuid.uuid4().hex[:24]}"
        t = self.machine.start(cmd, published, digest, data, exec_id=exec_id, partition=0,
                               now=now_ms(), debug=False)
        for state in t.writes:  # inputs are values here, not templates
            state.variables.update(inputs)
        run = InlineRun(execution_id=exec_id, definition=(digest, data))
        blocks: BlockRunner | MockedBlocks = self.runner
        if mocks:
            blocks = MockedBlocks(self.runner, self.mocked, mocks)
            run.mocks_used = blocks.used
        timeout = self.machine.limits.tool_timeout_ms / 1000 + 5
        await asyncio.wait_for(self._drive(t, run, blocks), timeout)
        return run

    async def _drive(self, first: Transition, run: InlineRun,
                     blocks: BlockRunner | MockedBlocks) -> None:
        states: dict[str, ExecState] = {}
        queue: deque[StepMsg] = deque()
        # A retry's next attempt (runtime/retry.py): in this process, it simply waits here.
        delayed: list[tuple[int, int, StepMsg]] = []

        async def parents(_partition: int, wanted: list[tuple[str, ExecState | None]]
                          ) -> list[ExecState | None]:
            return [known or states.get(exec_id) for exec_id, known in wanted]

        async def run_block(state: ExecState, block: RunnableBlock,
                            attempts: list[Attempt] | None = None, since: int = 0) -> Transition:
            result: Result = await blocks.run(state, block, now_ms())
            return self.machine.after_run(state, block, result, now_ms(), attempts, since)

        run_ahead = RunAhead(self.machine, self._definition, run_block=run_block,
                             load_states=parents, clock=now_ms)

        async def apply(t: Transition | None) -> bool:
            """Commit ``t`` here, carried on within its hop as a worker's is."""
            (t,) = await run_ahead.carry(0, [t])
            if t is None:
                return False
            for state in t.writes:
                states[state.execId] = state
            queue.extend(t.steps)
            _hold(delayed, t.delayed)
            run.trace.extend(t.log)
            for emit in t.emits:
                if emit.kind == "result":
                    run.result = RESULT.decode(emit.data)
                elif emit.kind == "execution":
                    run.executions.append(emit.data)
            return t.finishes_root

        root_id = run.execution_id
        finished = await apply(first)
        while (queue or delayed) and not finished:
            step = await _next_step(queue, delayed)
            state = states.get(step.exec_id)
            if state is None or state.status == "done" or state.version != step.version:
                continue
            finished = await apply(await self._advance(state, step, run_block))
        root = states.get(root_id)
        run.variables = dict(root.variables) if root else {}

    def _definition(self, digest: str) -> ToolDefinition | None:
        published = self.definitions.get(digest)
        return published.definition if published else None

    async def _advance(self, state: ExecState, step: StepMsg, run_block: Any) -> Transition:
        published = self.definitions.get(state.defHash)
        now = now_ms()
        if published is None:
            return self.machine.abort(state, internal_error("definition lost"), now)
        if step.kind == "resume" and step.child is not None:
            return self.machine.after_child(state, published.definition, step.child, now)
        planned = self.machine.plan(state, published.definition, now)
        if isinstance(planned, Transition):
            return planned
        transition: Transition = await run_block(state, planned, step.attempts, step.since)
        return transition

    async def record_executions(self, run: InlineRun) -> None:
        """Publish the run's ToolExecutionStreamEvents (metrics), as the workers do."""
        for data in run.executions:
            await self.client.xadd(self.keys.executions, {"data": data})


def _hold(delayed: list[tuple[int, int, StepMsg]], steps: list[tuple[int, StepMsg]]) -> None:
    """Keep a transition's delayed steps (a retry's next attempt) until they are due."""
    for due, step in steps:
        heapq.heappush(delayed, (due, len(delayed), step))


async def _next_step(queue: deque[StepMsg], delayed: list[tuple[int, int, StepMsg]]) -> StepMsg:
    """The next step: a queued one, else the earliest delayed one once it is due (in this
    process a retry's wait simply sleeps: a test run holds its request anyway)."""
    if queue:
        return queue.popleft()
    due, _, step = heapq.heappop(delayed)
    await asyncio.sleep(max(0, due - now_ms()) / 1000)
    return step


def single_block_definition(block: dict[str, Any]) -> dict[str, Any]:
    """A definition holding only ``block``, every target rewritten to end the tool, so the
    block runs alone and its matched condition still shows in the trace."""
    block = json.loads(json.dumps(block))
    end = {"type": "testEnd"}
    if block.get("type") != "return":
        block["defaultOutput"] = end
        for condition in block.get("outputConditions") or []:
            if isinstance(condition, dict):
                condition["target"] = end
    block_id = str(block.get("id") or "block")
    block["id"] = block_id
    return {"blocks": {block_id: block}, "onboardingBlockId": block_id}
