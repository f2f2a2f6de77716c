"""What the parts of the SDK need from each other, as protocols: a tool as the runner and the
providers see it, and an agent as a provider reads it. Providers depend on these, not on
core/agent.py, so the import arrow runs one way only (agent -> providers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .output import OutputSchema


@runtime_checkable
class AgentTool(Protocol):
    """What the runner needs from a tool; ``Tool`` is one, and other kinds may be too."""

    name: str
    description: str

    def to_gemini_declaration(self) -> dict[str, Any]: ...

    def to_openai_tool(self, *, strict: bool = False) -> dict[str, Any]: ...

    def to_anthropic_tool(self) -> dict[str, Any]: ...

    def bind_model_arguments(
        self, arguments: Mapping[str, Any], *, gemini: bool
    ) -> dict[str, Any]: ...

    async def execute_async(self, **kwargs: Any) -> Any: ...


class AgentConfig(Protocol):
    """What a provider reads of an agent to build its request (``Agent`` is one)."""

    @property
    def model(self) -> str: ...

    @property
    def instructions(self) -> str: ...

    @property
    def tools(self) -> Sequence[AgentTool]: ...

    @property
    def strict_tools(self) -> bool: ...

    @property
    def temperature(self) -> float | None: ...

    @property
    def max_output_tokens(self) -> int | None: ...

    @property
    def output_schema(self) -> OutputSchema | None: ...

    @property
    def tool_choice(self) -> str | None: ...


def turn_tool_choice(agent: AgentConfig, messages: Sequence[Any]) -> str | None:
    """The agent's ``tool_choice`` for this request; ``None`` (the provider's auto) once the
    last message is a tool result, so ``required`` or a named tool cannot loop forever
    (the OpenAI Agents SDK resets it the same way)."""
    if messages and getattr(messages[-1], "role", None) == "tool":
        return None
    return agent.tool_choice
