"""The typed events of ``Runner.run_streamed``; each has a ``type`` to match on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from .messages import ToolCall, ToolResult

if TYPE_CHECKING:
    from .result import RunResult


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's text, as the provider streamed it."""

    delta: str
    type: Literal["text_delta"] = field(default="text_delta", repr=False)


@dataclass(frozen=True)
class ToolCallEvent:
    """The model asked for a tool; sent before the tool runs."""

    tool_call: ToolCall
    type: Literal["tool_call"] = field(default="tool_call", repr=False)


@dataclass(frozen=True)
class ToolResultEvent:
    """A tool call's result, as the model will read it."""

    tool_result: ToolResult
    type: Literal["tool_result"] = field(default="tool_result", repr=False)

    @property
    def result(self) -> ToolResult:
        """The same as ``tool_result``: every event with a result names it ``.result``."""
        return self.tool_result


@dataclass(frozen=True)
class FinalEvent:
    """The last event: the run's result, the same a non-streamed run returns."""

    result: RunResult
    type: Literal["final"] = field(default="final", repr=False)


StreamEvent: TypeAlias = TextDelta | ToolCallEvent | ToolResultEvent | FinalEvent
