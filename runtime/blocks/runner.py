"""Dispatch a block to its executor."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from chatflow.schemas.definition import (
    CallToolBlock,
    ExecuteScriptBlock,
    HttpCallBlock,
    RunnableBlock,
)

from .. import errors
from ..definitions import DefinitionCache
from ..edge import Edge
from ..errors import ToolFailure
from ..interpolation import RenderTooLarge
from ..limits import Limits, variables_over
from ..outbound import Outbound
from ..outcome import BlockOutcome, SpawnChild
from ..sandbox import ScriptSandbox
from ..state import ExecState
from .common import value_of
from .http import run_http_call
from .script import run_script


class ToolSource(Protocol):
    """Where published tools are read from (``tool:{publishedToolId}``)."""

    async def get_tool(self, published_tool_id: str) -> bytes | None: ...


Executor = Callable[[ExecState, Any, int], Awaitable[BlockOutcome]]
Result = BlockOutcome | SpawnChild | ToolFailure


class Unsupported(ToolFailure):
    """Raised when a block kind has no executor in this runtime."""


class BlockRunner:
    """Runs one block; extra executors (callEndpoint, fetchMedia, callAI) register by type."""

    def __init__(
        self,
        *,
        http: Outbound,
        sandbox: ScriptSandbox,
        tools: ToolSource,
        definitions: DefinitionCache,
        limits: Limits,
        script_timeout_ms: int = 1000,
        edge: Edge | None = None,
    ) -> None:
        """``edge``: the shared gate of limited upstreams (runtime/edge.py); None: none."""
        self.http = http
        self.sandbox = sandbox
        self.tools = tools
        self.definitions = definitions
        self.limits = limits
        self.script_timeout_ms = script_timeout_ms
        self.edge = edge
        self.executors: dict[str, Executor] = {}

    def register(self, block_type: str, executor: Executor) -> None:
        self.executors[block_type] = executor

    async def run(self, state: ExecState, block: RunnableBlock, now_ms: int) -> Result:
        try:
            result = await self._run(state, block, now_ms)
        except RenderTooLarge as exc:
            return BlockOutcome(error=errors.render_too_large(exc))
        if isinstance(result, BlockOutcome):
            if result.retry is None:  # an executor may name another (a server's default)
                result.retry = getattr(block, "retry", None)
            return self._bounded(state, result)
        return result

    def _bounded(self, state: ExecState, outcome: BlockOutcome) -> BlockOutcome:
        """``outcome``, or a variables_too_large error when its writes would take the
        execution's variables over the cap; the block's outputs are then written empty, so
        the state stays bounded whatever its onError does next."""
        over = variables_over(state.variables, outcome.writes, self.limits.variables_max_bytes)
        if over is None:
            return outcome
        # A block that already failed keeps its own error (the more useful fact).
        return BlockOutcome(writes=dict.fromkeys(outcome.writes, ""), error=outcome.error or over,
                            duration_ms=outcome.duration_ms, emits=outcome.emits)

    async def _run(self, state: ExecState, block: RunnableBlock, now_ms: int) -> Result:
        # ``type() is``: a block is its model's own class, and a missed isinstance against a
        # pydantic model class runs ABCMeta's __instancecheck__ in Python.
        if type(block) is HttpCallBlock:
            return await run_http_call(self.http, state, block, self.limits, now_ms, self.edge)
        if type(block) is ExecuteScriptBlock:
            return await run_script(self.sandbox, state, block, self.limits, now_ms,
                                    self.script_timeout_ms)
        if type(block) is CallToolBlock:
            return await self._load_child(state, block)
        executor = self.executors.get(block.type)
        if executor is None:
            failure = errors.block_not_supported(block.type, block.id, state.publishedToolId)
            return Unsupported(failure.code, failure.message)
        return await executor(state, block, now_ms)

    async def _load_child(self, state: ExecState, block: CallToolBlock) -> SpawnChild | ToolFailure:
        raw = await self.tools.get_tool(block.publishedToolId)
        return self._child(state, block, raw)

    def call_tool(self, state: ExecState, block: CallToolBlock, raw: bytes | None) -> Result:
        """``run`` for a callTool whose child (``tool:{publishedToolId}``, None when absent)
        the caller has already read: a batch reads all its children in one round trip, and
        the blocks then run with no await, no task and no trip round the event loop."""
        try:
            return self._child(state, block, raw)
        except RenderTooLarge as exc:
            return BlockOutcome(error=errors.render_too_large(exc))

    def _child(self, state: ExecState, block: CallToolBlock,
               raw: bytes | None) -> SpawnChild | ToolFailure:
        parsed = self.definitions.parse(block.publishedToolId, raw)
        if isinstance(parsed, ToolFailure):
            return parsed
        published, digest, data = parsed
        if published.forCommand is not None or published.workspace != state.root.workspace:
            # Another workspace's tool, or a record made for one command (a fork's): exactly
            # as missing, so a reference cannot tell it exists (runtime/tenancy.py).
            return errors.tool_not_found(block.publishedToolId)
        cap = self.limits.max_rendered_chars
        inputs = {m.name: value_of(m.value, state, cap) for m in block.inputVariables}
        return SpawnChild(published, digest, data, inputs)
