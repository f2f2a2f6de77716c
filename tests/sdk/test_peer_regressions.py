"""Regressions found by porting the OpenAI Agents SDK's and pydantic-ai's tool tests.

Each test is written the way the peer test it came from is written: define a
function, build its tool, compare the schema (or the call) with what is expected.
"""

from __future__ import annotations

import asyncio
import math
import sys
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Annotated, Any, NotRequired, Self

import pytest
from pydantic import Field
from typing_extensions import TypedDict

from chatflow_agent import Agent, RunContext, Runner, Tool, tool
from chatflow_agent.core.events import ToolResultEvent
from chatflow_agent.core.messages import ToolResult
from chatflow_agent.errors import ProviderConfigError, ToolArgumentsError, ToolSchemaError
from chatflow_agent.mcp import MCPServerStdio
from tests.sdk.wire import check_anthropic_tool, check_openai_tool


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


# -- 3. pydantic-ai test_function_schema / typed dicts under `from __future__ import annotations`


class _Options(TypedDict):
    query: str
    limit: NotRequired[int]


def test_a_typed_dict_not_required_key_is_optional_in_the_schema_and_the_validator() -> None:
    @tool
    def search(options: _Options) -> str:
        return f"{options['query']}:{options.get('limit', 10)}"

    schema = _json_props(search)["options"]
    assert schema["required"] == ["query"]
    assert search.execute(options={"query": "pens"}) == "pens:10"


# -- 4. pydantic-ai test_tools.py: Annotated[T, Field(default=...)]


def test_an_annotated_field_default_makes_the_parameter_optional() -> None:
    @tool
    def page(size: Annotated[int, Field(default=20, description="Items per page.")]) -> int:
        return size

    params = page.to_openai_parameters()
    assert params.get("required", []) == []
    assert params["properties"]["size"]["default"] == 20
    assert params["properties"]["size"]["description"] == "Items per page."
    assert page.execute() == 20
    assert page.execute(size=5) == 5


# -- 8. openai-agents test_function_tool.py: tools built in a comprehension and by a helper


def test_tools_built_in_a_comprehension_resolve_types_local_to_the_enclosing_function() -> None:
    @dataclass
    class Point:
        x: int

    def first(p: Point) -> int:
        return p.x

    def second(p: Point) -> int:
        return -p.x

    tools = [tool(f) for f in (first, second)]

    assert [t.name for t in tools] == ["first", "second"]
    assert tools[0].execute(p={"x": 3}) == 3


def _make_tool(fn: Any) -> Tool[Any, Any]:
    return tool(fn)


def test_a_tool_built_by_a_helper_resolves_types_local_to_the_helpers_caller() -> None:
    @dataclass
    class Box:
        size: int

    def measure(box: Box) -> int:
        return box.size

    assert _make_tool(measure).execute(box={"size": 4}) == 4


# -- 11. smaller defects


@pytest.mark.parametrize("model", ["gemini-9-nope", "gpt4o", "gemini-"])
def test_a_model_name_of_no_known_family_is_refused_with_the_valid_prefixes(model: str) -> None:
    with pytest.raises(ProviderConfigError, match="expected a gemini-"):
        Agent("a", model=model)


@pytest.mark.parametrize(
    "model", ["gemini-2.5-flash", "gemini-2.0-pro", "gemini-pro", "models/gemini-1.5-flash-8b"]
)
def test_real_gemini_model_names_are_accepted(model: str) -> None:
    assert Agent("a", model=model).model == model


def test_a_sync_tool_executed_inside_a_running_loop_warns_that_it_blocks_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tool_module = sys.modules["chatflow_agent.tools.tool"]
    monkeypatch.setattr(tool_module, "_warned_in_loop", False)

    @tool
    def double(n: int) -> int:
        return 2 * n

    async def inside_a_loop() -> int:
        return double.execute(n=2)  # type: ignore[no-any-return]

    with pytest.warns(RuntimeWarning, match="execute_async"):
        assert asyncio.run(inside_a_loop()) == 4


def test_an_unannotated_parameter_advertised_as_string_is_validated_as_one() -> None:
    @tool
    def label(name, count=3):  # type: ignore[no-untyped-def]
        return f"{name}x{count}"

    assert _json_props(label)["count"] == {"type": "string"}
    with pytest.raises(ToolArgumentsError, match="count"):
        label.execute(name="a", count=3)
    assert label.execute(name="a") == "ax3"
    assert label.execute(name="a", count="7") == "ax7"


def test_the_streamed_tool_result_event_and_the_final_event_both_name_it_result() -> None:
    event = ToolResultEvent(ToolResult("call-1", "f", "ok"))
    assert event.result is event.tool_result


# -- 7. a callable object: its class says what it is, its __call__ documents the parameters
# (issue 32: the description is the class docstring's summary, as pydantic-ai reads it)


def test_a_callable_object_takes_its_description_from_the_class_and_parameter_docs_from_call(
        ) -> None:
    class Greeter:
        """A greeter object."""

        def __call__(self, name: str) -> str:
            """Greet someone.

            Args:
                name: Who to greet.
            """
            return f"hi {name}"

    greet = tool(Greeter(), name="greet")

    assert greet.description == "A greeter object."
    assert _json_props(greet)["name"] == {"type": "string", "description": "Who to greet."}
    assert greet.execute(name="ann") == "hi ann"


def test_a_callable_object_whose_class_has_no_docstring_is_described_by_call() -> None:
    class Greeter:
        def __call__(self, name: str) -> str:
            """Greet someone.

            Args:
                name: Who to greet.
            """
            return f"hi {name}"

    greet = tool(Greeter(), name="greet")

    assert greet.description == "Greet someone."
    assert _json_props(greet)["name"]["description"] == "Who to greet."


class _Address(TypedDict):
    street: str
    """The street and number."""
    city: Annotated[str, Field(description="The city, from Field.")]
    """Not used: Field's description is given."""


def test_typed_dict_attribute_docstrings_describe_their_keys() -> None:
    @tool
    def ship(to: _Address) -> str:
        return to["city"]

    props = _json_props(ship)["to"]["properties"]
    assert props["street"] == {"type": "string", "description": "The street and number."}
    assert props["city"]["description"] == "The city, from Field."


# -- issue 32. Four more cases from the peers' own tests


def test_a_returns_section_right_after_the_args_is_not_folded_into_the_last_argument() -> None:
    # openai-agents test_function_schema.py (missing blank lines), pydantic-ai
    # test_google_style_with_returns: a docstring without a body, Returns: with no blank line.
    @tool
    def add(a: int, b: int) -> int:
        """
        Args:
            a: The first number.
            b: The second number.
        Returns:
            int: The sum.
        """
        return a + b

    @tool
    def sub(a: int, b: int) -> int:
        """Args:
            a: The first number.
            b: The second number.
        Returns:
            The difference.
        """
        return a - b

    for made in (add, sub):
        assert _json_props(made) == {
            "a": {"type": "integer", "description": "The first number."},
            "b": {"type": "integer", "description": "The second number."},
        }
        assert made.description == ""


async def _google_style_docstring_no_body(
    foo: int, bar: Annotated[str, Field(description="from fields")]
) -> str:
    """
    Args:
        foo: The foo thing.
        bar: The bar thing.
    """
    return f"{foo} {bar}"


def test_a_google_docstring_with_no_body_leaves_field_descriptions_to_field() -> None:
    # pydantic-ai test_tools.py::test_docstring_google_no_body
    made = tool(_google_style_docstring_no_body)

    assert made.description == ""
    assert made.to_openai_parameters() == {
        "type": "object",
        "properties": {
            "foo": {"type": "integer", "description": "The foo thing."},
            "bar": {"type": "string", "description": "from fields"},
        },
        "required": ["foo", "bar"],
    }


def test_the_docstring_still_wins_over_an_annotated_string_and_a_field_default() -> None:
    # openai-agents test_function_prefers_docstring_descriptions_over_annotated_metadata and
    # test_function_with_field_description_merge: only a Field inside Annotated wins.
    @tool
    def add(a: Annotated[int, "Annotated description for a"],
            b: int = Field(default=1, description="Field description")) -> int:
        """Adds two integers.

        Args:
            a: Docstring provided description.
            b: Docstring description
        """
        return a + b

    assert _json_props(add)["a"]["description"] == "Docstring provided description."
    assert _json_props(add)["b"]["description"] == "Docstring description"


@dataclass
class _TreeNode:
    """A node and the nodes under it."""

    value: int
    children: list[Self] = dataclass_field(default_factory=list)


def test_a_recursive_dataclass_through_self_is_a_ref_and_only_gemini_refuses_it() -> None:
    # pydantic-ai tests/models/test_google.py TreeNode, a dataclass that names itself: the tool
    # is made (OpenAI and Anthropic take $ref); only Gemini's declaration is refused.
    @tool
    def total(root: _TreeNode) -> int:
        """Sum a tree."""
        return root.value + sum(total.execute(root=child) for child in root.children)

    parameters = total.to_openai_parameters()
    assert parameters["properties"] == {"root": {"$ref": "#/$defs/_TreeNode"}}
    assert parameters["$defs"]["_TreeNode"]["properties"]["children"] == {
        "type": "array", "items": {"$ref": "#/$defs/_TreeNode"}}
    check_openai_tool(total.to_openai_tool())
    check_anthropic_tool(total.to_anthropic_tool())
    sent = {"root": {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}}
    assert total.execute(**sent) == 6
    with pytest.raises(ToolArgumentsError, match=r"root.children.0.value"):
        total.execute(root={"value": 1, "children": [{"value": "x"}]})
    Agent("a", tools=[total], model="gpt-4o")
    with pytest.raises(ToolSchemaError, match="_TreeNode refers to itself"):
        total.to_gemini_declaration()
