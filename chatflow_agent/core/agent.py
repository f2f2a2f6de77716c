"""An agent: instructions, tools and the model that drives them."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import ToolSchemaError
from ..schema.limits import MAX_TOOLS_PER_REQUEST
from ..tools import Tool
from .contracts import AgentTool
from .durations import check_seconds
from .output import FINAL_RESULT_TOOL, OutputSchema
from .usage import UsageLimits

if TYPE_CHECKING:
    from ..providers.base import Provider


@runtime_checkable
class Toolset(Protocol):
    """Several tools from one source (an MCP server); the Agent declares each of them."""

    def agent_tools(self) -> Sequence[AgentTool]: ...


class Agent:
    """Instructions, tools and a model; the model name picks the provider.

    ``gemini-*`` goes to Gemini, ``gpt-*`` and ``o1``/``o3``/``o4``... to OpenAI,
    ``claude-*`` to Anthropic. Pass ``provider=`` to use another endpoint.
    """

    def __init__(
        self,
        name: str,
        instructions: str = "",
        tools: Iterable[AgentTool | Toolset | Callable[..., Any]] = (),
        model: str = "gemini-2.5-flash",
        *,
        provider: Provider | None = None,
        max_turns: int = 10,
        strict_tools: bool = False,
        temperature: float | None = None,
        max_output_tokens: int | None = None,
        tool_timeout: float | None = None,
        output_type: Any = None,
        usage_limits: UsageLimits | None = None,
        tool_choice: str | None = None,
    ) -> None:
        from ..providers.registry import provider_family

        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        if tool_timeout is not None:
            tool_timeout = check_seconds(tool_timeout, "tool_timeout")
        self.name = name
        self.instructions = instructions
        self.model = model
        self.provider = provider
        self.max_turns = max_turns
        self.strict_tools = strict_tools
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        # Seconds a tool call may take unless the tool sets its own (@tool(timeout=...)).
        self.tool_timeout = tool_timeout
        # The most each run may use; Runner.run(usage_limits=...) replaces it for one run.
        self.usage_limits = usage_limits
        # "auto", "required", "none" or a tool's name; None leaves it to the provider (auto).
        self.tool_choice = tool_choice
        tools = tuple(tools)
        # Toolsets with a run_scope (MCP servers) keep one connection open per run.
        self.toolsets: tuple[Toolset, ...] = tuple(t for t in tools if isinstance(t, Toolset))
        self.tools: tuple[AgentTool, ...] = _expand(tools)
        self._by_name = self._index_tools()
        # The type of RunResult.output, asked of the model in its provider's own way.
        self.output_type = output_type
        self.output_schema = (
            OutputSchema(output_type, owner=name) if output_type is not None else None
        )
        self._check_tool_choice()
        if self.output_schema is not None and FINAL_RESULT_TOOL in self._by_name:
            raise ToolSchemaError(
                f"agent {name!r}: a tool named {FINAL_RESULT_TOOL!r} clashes with output_type, "
                "which uses that name for the final answer"
            )
        if provider is None and provider_family(model) == "gemini":
            # An unknown model name fails above, not mid-run; a tool Gemini cannot
            # declare (a recursive type) fails here for a Gemini model.
            for agent_tool in self.tools:
                agent_tool.to_gemini_declaration()
            if self.output_schema is not None:
                self.output_schema.gemini_function()
        if strict_tools:
            for agent_tool in self.tools:
                agent_tool.to_openai_tool(strict=True)

    def with_tool_choice(self, tool_choice: str) -> Agent:
        """This agent with another ``tool_choice`` (``Runner.run(tool_choice=...)``), checked
        the same way; the agent itself is left as it was."""
        chosen = copy.copy(self)
        chosen.tool_choice = tool_choice
        chosen._check_tool_choice()
        return chosen

    def _check_tool_choice(self) -> None:
        choice = self.tool_choice
        if choice is None:
            return
        if self.output_type is not None:
            raise ValueError(
                "tool_choice cannot be combined with output_type: the final answer already "
                "decides how tools are chosen"
            )
        if choice not in ("auto", "required", "none") and choice not in self._by_name:
            raise ValueError(
                f"tool_choice {choice!r} is not 'auto', 'required', 'none' or a tool of agent "
                f"{self.name!r} (its tools: {', '.join(sorted(self._by_name)) or 'none'})"
            )

    def _index_tools(self) -> dict[str, AgentTool]:
        if len(self.tools) > MAX_TOOLS_PER_REQUEST:
            raise ToolSchemaError(
                f"agent {self.name!r} has {len(self.tools)} tools; "
                f"providers accept at most {MAX_TOOLS_PER_REQUEST}"
            )
        by_name: dict[str, AgentTool] = {}
        for agent_tool in self.tools:
            if isinstance(agent_tool, Tool) and agent_tool.is_unbound_method:
                raise ToolSchemaError(
                    f"agent {self.name!r}: tool {agent_tool.name!r} is a method read from "
                    "its class; pass it from an instance (obj.method)"
                )
            if agent_tool.name in by_name:
                raise ToolSchemaError(
                    f"agent {self.name!r} has two tools named {agent_tool.name!r}"
                )
            by_name[agent_tool.name] = agent_tool
        return by_name

    def tool_named(self, name: str) -> AgentTool | None:
        return self._by_name.get(name)

    def __repr__(self) -> str:
        names = [t.name for t in self.tools]
        return f"Agent(name={self.name!r}, model={self.model!r}, tools={names!r})"


def _expand(tools: Iterable[AgentTool | Toolset | Callable[..., Any]]) -> tuple[AgentTool, ...]:
    expanded: list[AgentTool] = []
    for item in tools:
        if isinstance(item, Toolset):
            expanded.extend(item.agent_tools())
        elif isinstance(item, AgentTool):
            expanded.append(item)
        else:
            expanded.append(Tool(item))
    return tuple(expanded)
