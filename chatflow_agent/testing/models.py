"""``TestModel`` and ``FunctionModel``: models for testing agents, as pydantic-ai has them."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias

from ..core.messages import AssistantMessage, Message, ToolResult
from .double import ModelDouble
from .values import TestModelError, value_for
from .wire import AgentInfo, Call, ModelTurn, ToolDefinition

__all__ = ["FunctionModel", "TestModel"]

Answer: TypeAlias = "str | Call | Sequence[Call] | ModelTurn"
ModelFunction: TypeAlias = Callable[[list[Message], AgentInfo], "Answer | Awaitable[Answer]"]
StreamFunction: TypeAlias = Callable[
    [list[Message], AgentInfo], "Iterable[str | Call] | AsyncIterable[str | Call]"
]


class TestModel(ModelDouble):
    """Calls every tool once with arguments built from its declared schema, then answers.

    The arguments fit the schema exactly as the provider was sent it (nested
    objects, enums, lists, optional fields included), so a tool whose schema and
    validation disagree fails here. The answer is a JSON text mapping each tool
    to its result (errors as ``{"error": ...}``), or ``custom_output_text``; with
    an ``output_type``, a value built from the output schema (or
    ``custom_output_args``). ``tool_choice`` is honoured: ``"none"`` calls
    nothing, a tool's name calls only that tool. ``call_tools`` limits the tools
    called to the names given.
    """

    __test__ = False  # not a pytest test class, despite its name

    def __init__(
        self,
        *,
        call_tools: Sequence[str] | None = None,
        custom_output_text: str | None = None,
        custom_output_args: Any = None,
        family: str | None = None,
    ) -> None:
        super().__init__(family=family)
        self.call_tools = tuple(call_tools) if call_tools is not None else None
        self.custom_output_text = custom_output_text
        self.custom_output_args = custom_output_args

    async def respond(self, info: AgentInfo, messages: list[Message]) -> ModelTurn:
        this_run = _since_last_user(messages)
        if not any(isinstance(m, AssistantMessage) for m in this_run):
            calls = tuple(
                Call(tool.name, value_for(tool.parameters, f"tool {tool.name!r} arguments"))
                for tool in self._tools_to_call(info)
            )
            if calls:
                return ModelTurn(None, calls)
        return self._final(info, [m for m in this_run if isinstance(m, ToolResult)])

    def _tools_to_call(self, info: AgentInfo) -> list[ToolDefinition]:
        choice = info.tool_choice
        if choice == "none":
            return []
        tools = list(info.tools)
        if choice not in (None, "auto", "required"):
            tools = [t for t in tools if t.name == choice]
        if self.call_tools is not None:
            unknown = sorted(set(self.call_tools) - {t.name for t in info.tools})
            if unknown:
                raise TestModelError(
                    f"TestModel(call_tools=...) names {', '.join(unknown)}, which the agent "
                    f"does not declare (it declares: {', '.join(t.name for t in info.tools) or 'none'})"
                )
            tools = [t for t in tools if t.name in self.call_tools]
        return tools

    def _final(self, info: AgentInfo, results: list[ToolResult]) -> ModelTurn:
        if info.output_tool is not None:
            value = self.custom_output_args
            if value is None:
                value = value_for(info.output_tool.parameters, "the final answer")
            return ModelTurn(None, (Call(info.output_tool.name, value),))
        if info.output_schema is not None:
            value = self.custom_output_args
            if value is None:
                value = value_for(info.output_schema, "the final answer")
            return ModelTurn(json.dumps(value))
        if self.custom_output_text is not None:
            return ModelTurn(self.custom_output_text)
        summary = {r.name: {"error": r.content} if r.is_error else _parsed(r.content) for r in results}
        return ModelTurn(json.dumps(summary) if results else "success (no tool calls)")


class FunctionModel(ModelDouble):
    """A Python function plays the model.

    ``function(messages, info)`` gets the conversation and an ``AgentInfo`` (the
    declared tools, ``tool_choice``, the output schema), all read back from the
    request the real provider encoder built, and returns the reply: a text, a
    ``Call``, a list of calls, or a ``ModelTurn`` (text and calls). It may be
    sync or async. ``stream_function`` yields the reply in pieces (text pieces
    and calls; a sync or async generator) for ``Runner.run_streamed``; given
    only one of the two, the other is derived from it.
    """

    def __init__(
        self,
        function: ModelFunction | None = None,
        *,
        stream_function: StreamFunction | None = None,
        family: str | None = None,
    ) -> None:
        if function is None and stream_function is None:
            raise TypeError("FunctionModel needs a function, a stream_function, or both")
        super().__init__(family=family)
        self.function = function
        self.stream_function = stream_function

    async def respond(self, info: AgentInfo, messages: list[Message]) -> ModelTurn:
        if self.function is None:
            texts: list[str] = []
            calls: list[Call] = []
            async for piece in self.respond_streamed(info, messages):
                (calls if isinstance(piece, Call) else texts).append(piece)  # type: ignore[arg-type]
            return ModelTurn("".join(texts) or None, tuple(calls))
        answer = self.function(messages, info)
        if inspect.isawaitable(answer):
            answer = await answer
        return _turn(answer)

    def respond_streamed(self, info: AgentInfo, messages: list[Message]) -> AsyncIterator[str | Call]:
        if self.stream_function is None:
            return super().respond_streamed(info, messages)
        return _checked_pieces(self.stream_function(messages, info))


async def _checked_pieces(
    produced: Iterable[str | Call] | AsyncIterable[str | Call],
) -> AsyncIterator[str | Call]:
    if isinstance(produced, AsyncIterable):
        async for piece in produced:
            yield _piece(piece)
    elif isinstance(produced, Iterable) and not isinstance(produced, str):
        for piece in produced:
            yield _piece(piece)
    else:
        raise TestModelError(
            f"FunctionModel's stream_function returned {type(produced).__name__}; "
            "it must yield text pieces (str) and Call objects"
        )


def _piece(piece: Any) -> str | Call:
    if isinstance(piece, str | Call):
        return piece
    raise TestModelError(
        f"FunctionModel's stream_function yielded {type(piece).__name__}; it must yield str or Call"
    )


def _turn(answer: Any) -> ModelTurn:
    if isinstance(answer, ModelTurn):
        return answer
    if isinstance(answer, str):
        return ModelTurn(answer)
    if isinstance(answer, Call):
        return ModelTurn(None, (answer,))
    if isinstance(answer, Sequence) and answer and all(isinstance(c, Call) for c in answer):
        return ModelTurn(None, tuple(answer))
    raise TestModelError(
        f"FunctionModel's function returned {answer!r}; it must return a str, a Call, "
        "a non-empty list of Call, or a ModelTurn"
    )


def _since_last_user(messages: list[Message]) -> list[Message]:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return messages[index + 1 :]
    return messages


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
