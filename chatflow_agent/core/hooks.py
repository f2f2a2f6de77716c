"""``RunHooks``: callbacks around each model call and each tool call of a run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .context import RunContext
from .messages import Message, ToolCall, ToolResult

if TYPE_CHECKING:
    from ..providers.base import ModelReply
    from .agent import Agent


class RunHooks:
    """Subclass and override what you need; every method is a no-op coroutine here.

    A hook that raises fails the run: hooks are part of the program, not observers
    whose failures may be swallowed.
    """

    async def on_model_request(
        self, context: RunContext[Any], agent: Agent, messages: Sequence[Message]
    ) -> None:
        """Before each model call, with the history about to be sent."""

    async def on_model_response(
        self, context: RunContext[Any], agent: Agent, reply: ModelReply
    ) -> None:
        """After each model call, with its turn, finish reason and usage."""

    async def on_tool_start(self, context: RunContext[Any], agent: Agent, call: ToolCall) -> None:
        """Before a known tool is called (not for unknown tools or unreadable arguments)."""

    async def on_tool_end(
        self, context: RunContext[Any], agent: Agent, call: ToolCall, result: ToolResult
    ) -> None:
        """After a tool ran, with what the model will read (``result.is_error`` on failure)."""
