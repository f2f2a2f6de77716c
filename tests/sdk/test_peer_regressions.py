"""Regressions found by porting the OpenAI Agents SDK's and pydantic-ai's tool tests.

Each test is written the way the peer test it came from is written: define a
function, build its tool, compare the schema (or the call) with what is expected.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from chatflow_agent import Agent, RunContext, Runner, Tool, tool
from chatflow_agent.core.messages import ToolResult
from chatflow_agent.mcp import MCPServerStdio


def _json_props(t: Tool[Any, Any]) -> dict[str, Any]:
    return t.to_openai_parameters()["properties"]  # type: ignore[no-any-return]


# -- 1. openai-agents test_function_schema.py::test_class_based_functions (method + context)


def test_a_method_taking_a_run_context_builds_its_schema_without_self_or_the_context() -> None:
    class Shop:
        def __init__(self, stock: int) -> None:
            self.stock = stock

        @tool
        def reserve(self, ctx: RunContext[str], item: str, count: int = 1) -> str:
            """Reserve items."""
            return f"{ctx.deps}:{item}:{min(count, self.stock)}"

    bound = Shop(2).reserve
    assert set(_json_props(bound)) == {"item", "count"}
    assert bound.to_openai_parameters()["required"] == ["item"]
    assert bound.execute(ctx=RunContext("alice"), item="pen", count=5) == "alice:pen:2"


# -- 2. pydantic-ai test_tools.py docstring formats: a docstring that opens with its section


def test_a_docstring_whose_first_line_is_args_keeps_every_parameter_description() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Args:
            a: The first number.
            b: The second number,
                added to the first.
        """
        return a + b

    assert _json_props(add) == {
        "a": {"type": "integer", "description": "The first number."},
        "b": {"type": "integer", "description": "The second number, added to the first."},
    }
    assert add.description == ""


# -- 5. openai-agents test_function_tool.py: a result that is not JSON is an error, not a repr


def test_an_unserialisable_return_value_is_an_error_result_not_its_repr() -> None:
    class Opaque:
        pass

    result = ToolResult.from_value("call-1", "opaque", {"value": Opaque()})

    assert result.is_error is True
    assert "cannot be sent as JSON" in result.content
    assert "Opaque" in result.content


# -- 9. timeouts: nan, inf and booleans are not numbers of seconds


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, True, False, 0, -1, "5"])
def test_a_tool_timeout_that_is_not_a_positive_finite_number_is_refused(bad: Any) -> None:
    def f() -> int:
        return 1

    with pytest.raises(ValueError, match="timeout"):
        tool(timeout=bad)(f)
    with pytest.raises(ValueError, match="tool_timeout"):
        Agent("a", tools=[f], model="gpt-4o", tool_timeout=bad)
    with pytest.raises(ValueError, match="timeout"):
        Runner(Agent("a", model="gpt-4o"), timeout=bad)
    with pytest.raises(ValueError, match="timeout"):
        MCPServerStdio("python", timeout=bad)


def test_an_integer_timeout_is_accepted_as_seconds() -> None:
    @tool(timeout=2)
    def f() -> int:
        return 1

    assert f.timeout == 2.0
