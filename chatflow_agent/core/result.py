"""``RunResult``: what one user turn of ``Runner.run`` produced (its own module, so the
streaming events can name it without importing the runner)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .messages import Message, ToolResult
from .usage import Usage

if TYPE_CHECKING:
    from ..providers.base import FinishReason


@dataclass
class RunResult:
    """The outcome of one user turn.

    ``finish_reason`` is why the last model call stopped: ``"stop"``, ``"length"``
    (cut at the token limit) or ``"content_filter"`` (blocked or refused; then
    ``content`` is None and the empty turn is not stored). ``usage`` sums the
    tokens of every model call of the run. ``output`` is the validated
    ``Agent(output_type=...)`` instance, or ``content`` without an output type.
    """

    content: str | None
    tool_calls_executed: list[str] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list, repr=False)
    session_id: str = ""
    turns: int = 0
    finish_reason: FinishReason = "stop"
    usage: Usage = field(default_factory=Usage)
    output: Any = None

    def __str__(self) -> str:
        return self.content or ""


__all__ = ["RunResult"]
