"""The test runs' mock layer over a BlockRunner: a block with a mock gets its mock, not the
outside world's answer.

Built per test-case run (``InlineRunner.run(..., mocks=...)``); the workers never see it,
so a run without mocks, and the production hot path, are as before. A mocked block runs
through a second BlockRunner made exactly like the real one but holding a
:class:`~chatflow.runtime.blocks.mocks.MockOutbound`: the block's own executor renders its
request, gets the mock as the reply, and writes, fails and reports it as it would a real
one. An ``{error: {code, message}}`` mock fails the block with exactly that error.
"""

from __future__ import annotations

from typing import Any

from chatflow.runtime.blocks import mocks as transport
from chatflow.runtime.blocks.runner import BlockRunner, Result
from chatflow.runtime.errors import ToolFailure, mock_invalid
from chatflow.runtime.outcome import BlockOutcome
from chatflow.runtime.registry.cases import mock_for, mock_problem
from chatflow.runtime.state import ExecState
from chatflow.schemas.definition import RunnableBlock


class MockedBlocks:
    """``run`` as a BlockRunner's, with ``mocks`` answered by ``mocked`` (a runner whose
    Outbound is a MockOutbound); ``used`` names the mocks a block took."""

    def __init__(self, real: BlockRunner, mocked: BlockRunner, mocks: dict[str, Any]) -> None:
        self.real = real
        self.mocked = mocked
        self.mocks = mocks
        self.used: set[str] = set()

    async def run(self, state: ExecState, block: RunnableBlock, now_ms: int) -> Result:
        found = mock_for(self.mocks, state.toolId, block.id, state.depth)
        if found is None:
            return await self.real.run(state, block, now_ms)
        key, mock = found
        self.used.add(key)
        problem = mock_problem(block.type, mock)
        if problem is not None:
            return BlockOutcome(error=mock_invalid(key, problem), debug={"mocked": True})
        try:
            answer = transport.answer_for(block.type, getattr(block, "mode", None), mock)
        except ToolFailure as failure:
            return BlockOutcome(error=failure, debug={"mocked": True})
        token = transport.answering(answer)
        try:
            result = await self.mocked.run(state, block, now_ms)
        finally:
            transport.done(token)
        if isinstance(result, BlockOutcome):
            result.debug["mocked"] = True
            if "error" in mock:  # exactly the recorded error, not an executor's mapping of it
                result.error = ToolFailure(str(mock["error"]["code"]),
                                           str(mock["error"]["message"]))
        return result
