"""Defining tools: the decorator, names, descriptions, and errors raised at definition time."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from chatflow_agent import Agent, Tool, ToolSchemaError, tool
from chatflow_agent.errors import ProviderConfigError


def _props(t: Tool) -> dict:  # type: ignore[type-arg]
    return t.to_gemini_declaration()["parameters"]["properties"]


def test_the_bare_decorator_takes_name_and_description_from_the_function() -> None:
    @tool
    def greet(name: str) -> str:
        """Say hello to someone.

        Args:
            name: Who to greet.
        """
        return f"hello {name}"

    assert isinstance(greet, Tool)
    assert greet.name == "greet"
    assert greet.description == "Say hello to someone."
    assert greet.__name__ == "greet" and greet.__wrapped__ is greet.func  # type: ignore[attr-defined]


def test_a_tool_stays_callable_like_the_function_it_wraps() -> None:
    @tool
    def add(a: int, b: int = 1) -> int:
        return a + b

    assert add(2) == 3
    assert add(2, b=5) == 7


def test_the_parametrized_decorator_overrides_name_and_description() -> None:
    @tool(name="lookup", description="Look something up.")
    def internal_lookup(key: str) -> str:
        """Internal docs the model should not see."""
        return key

    assert (internal_lookup.name, internal_lookup.description) == ("lookup", "Look something up.")
    assert internal_lookup.to_anthropic_tool()["name"] == "lookup"


def test_a_tool_can_be_built_directly_from_a_function() -> None:
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    built = Tool(shout, name="shout_tool")
    assert built.name == "shout_tool"
    assert built.description == "Upper-case a text."
    assert built.execute(text="hi") == "HI"


def test_a_function_without_docstring_has_an_empty_description() -> None:
    @tool
    def silent(x: int) -> int:
        return x

    assert silent.description == ""
    assert "description" not in silent.to_gemini_declaration()


def test_google_docstrings_describe_each_parameter() -> None:
    @tool
    def forecast(city: str, days: int = 3) -> str:
        """Forecast the weather.

        Args:
            city: City name, e.g. "Lisbon".
            days (int): How many days
                to forecast.

        Returns:
            A forecast.
        """
        return city

    assert forecast.description == "Forecast the weather."
    assert _props(forecast) == {
        "city": {"type": "STRING", "description": 'City name, e.g. "Lisbon".'},
        "days": {"type": "INTEGER", "description": "How many days to forecast."},
    }


def test_numpy_docstrings_describe_each_parameter() -> None:
    @tool
    def convert(amount: float, currency: str) -> float:
        """Convert an amount to euros.

        Parameters
        ----------
        amount : float
            The amount to convert.
        currency : str
            ISO 4217 code
            of the source currency.

        Returns
        -------
        float
        """
        return amount

    assert convert.description == "Convert an amount to euros."
    props = _props(convert)
    assert props["amount"]["description"] == "The amount to convert."
    assert props["currency"]["description"] == "ISO 4217 code of the source currency."


def test_sphinx_docstrings_describe_each_parameter() -> None:
    @tool
    def book(room: str, nights: int) -> str:
        """Book a hotel room.

        :param room: Room type,
            such as "double".
        :param int nights: Number of nights.
        :returns: A confirmation code.
        """
        return room

    assert book.description == "Book a hotel room."
    props = _props(book)
    assert props["room"]["description"] == 'Room type, such as "double".'
    assert props["nights"]["description"] == "Number of nights."


def test_the_docstring_entry_beats_annotated_text_and_field_descriptions() -> None:
    @tool
    def search(
        query: Annotated[str, "Annotated text that loses"],
        limit: int = Field(10, description="Field text that loses"),
        page: Annotated[int, "Annotated text without a docstring entry"] = 1,
    ) -> list[str]:
        """Search.

        Args:
            query: Full-text query.
            limit: Maximum hits.
        """
        return []

    props = _props(search)
    assert props["query"]["description"] == "Full-text query."
    assert props["limit"]["description"] == "Maximum hits."
    assert props["page"]["description"] == "Annotated text without a docstring entry"
    assert search.to_openai_parameters()["properties"]["query"]["description"] == ("Full-text query.")


@dataclass
class Parcel:
    """A parcel the shop ships."""

    weight_kg: float


def test_the_docstring_entry_beats_the_docstring_of_the_parameter_type() -> None:
    @tool
    def ship(parcel: Parcel, backup: Parcel | None = None) -> None:
        """Ship a parcel.

        Args:
            parcel: The parcel the user wants shipped.
        """

    props = _props(ship)
    assert props["parcel"]["description"] == "The parcel the user wants shipped."
    # Without a docstring entry, the type's own docstring is the fallback.
    assert props["backup"]["description"] == "A parcel the shop ships."


@pytest.mark.parametrize(
    ("name", "provider"),
    [("has space", "Anthropic"), ("a" * 65, "Anthropic"), ("dotted.name", "Anthropic"),
     ("9lives", "Gemini"), ("", "Anthropic")],
)  # fmt: skip
def test_a_name_that_breaks_a_provider_rule_fails_at_definition(name: str, provider: str) -> None:
    def func(x: int) -> int:
        return x

    with pytest.raises(ToolSchemaError, match=provider):
        Tool(func, name=name)


def test_a_name_of_sixty_four_safe_characters_is_accepted() -> None:
    def func(x: int) -> int:
        return x

    assert Tool(func, name="a" * 64).name == "a" * 64


class Opaque:
    pass


@dataclass
class Line:
    sku: str
    handle: Opaque


@dataclass
class Order:
    lines: list[Line]


@dataclass
class TreeNode:
    value: int
    children: list[TreeNode]


def test_an_unsupported_type_fails_at_definition_naming_function_and_parameter() -> None:
    with pytest.raises(ToolSchemaError) as caught:

        @tool
        def ship(order: Order) -> None: ...

    message = str(caught.value)
    assert "ship" in message and "order.lines[].handle" in message and "Opaque" in message
    assert caught.value.path == "order.lines[].handle"
    assert caught.value.function.endswith("ship")


def test_a_recursive_type_is_defined_and_refused_only_when_gemini_s_declaration_is_asked_for() -> None:
    @tool
    def walk(tree: TreeNode) -> None: ...

    assert walk.to_openai_parameters()["$defs"]["TreeNode"]["required"] == ["value", "children"]
    with pytest.raises(ToolSchemaError, match=r"'.*walk'.*TreeNode refers to itself.*no \$ref"):
        walk.to_gemini_declaration()


def test_a_default_that_does_not_fit_its_type_fails_at_definition() -> None:
    with pytest.raises(ToolSchemaError, match=r"'count'.*default 'three'"):

        @tool
        def repeat(count: int = "three") -> None: ...  # type: ignore[assignment]


def test_a_none_default_on_a_non_optional_type_fails_with_a_hint() -> None:
    with pytest.raises(ToolSchemaError, match=r"T \| None"):

        @tool
        def greet(name: str = None) -> None: ...  # type: ignore[assignment]  # noqa: RUF013


@pytest.mark.parametrize(
    "annotation",
    [
        dict[int, str],
        Literal[1, "1"],
        Literal[None],
        bytes,
        "NotDefinedAnywhere",
        None,
        Any,
        object,
        list[object],
        Annotated[Any, "anything"],
    ],
    ids=[
        "int keys",
        "literal collision",
        "literal none",
        "bytes",
        "bad forward ref",
        "None",
        "Any",
        "object",
        "list of object",
        "annotated Any",
    ],
)
def test_other_inexpressible_annotations_fail_at_definition(annotation: object) -> None:
    def probe(x):  # type: ignore[no-untyped-def]
        return x

    probe.__annotations__ = {"x": annotation}
    with pytest.raises(ToolSchemaError, match="probe"):
        Tool(probe, name="probe")


def test_args_and_kwargs_never_reach_the_schema() -> None:
    @tool
    def flexible(a: int, *rest: int, **options: str) -> int:
        return a

    assert list(_props(flexible)) == ["a"]
    assert list(flexible.to_openai_parameters()["properties"]) == ["a"]


def test_a_no_argument_tool_declares_no_gemini_parameters_but_an_empty_json_object() -> None:
    @tool
    def now() -> str:
        """Current time."""
        return "noon"

    assert now.to_gemini_declaration() == {"name": "now", "description": "Current time."}
    assert now.to_openai_parameters() == {"type": "object", "properties": {}}
    assert now.to_openai_parameters(strict=True) == {
        "type": "object", "properties": {}, "required": [], "additionalProperties": False,
    }  # fmt: skip


def test_returned_schemas_are_copies_the_caller_may_edit() -> None:
    @tool
    def f(x: int) -> int:
        return x

    f.to_gemini_declaration()["parameters"]["properties"].clear()
    assert _props(f) == {"x": {"type": "INTEGER"}}


def test_an_agent_refuses_two_tools_with_one_name() -> None:
    @tool
    def a(x: int) -> int:
        return x

    with pytest.raises(ToolSchemaError, match="two tools named 'a'"):
        Agent(name="dup", tools=[a, Tool(a.func)])


def test_an_agent_wraps_plain_functions_as_tools() -> None:
    def plain(x: int) -> int:
        """Plain function."""
        return x

    agent = Agent(name="wrapper", tools=[plain])
    assert isinstance(agent.tools[0], Tool) and agent.tool_named("plain") is agent.tools[0]


def test_an_agent_in_strict_mode_refuses_a_tool_strict_mode_cannot_express() -> None:
    @tool
    def tally(counts: dict[str, int]) -> int:
        return 0

    with pytest.raises(ToolSchemaError, match=r"'counts'.*strict"):
        Agent(name="strict", tools=[tally], model="gpt-4o", strict_tools=True)


def test_an_agent_with_an_unknown_model_name_fails_when_built() -> None:
    with pytest.raises(ProviderConfigError, match="llama-3"):
        Agent(name="who", model="llama-3")


def test_tools_made_from_partials_keep_working() -> None:
    def power(base: int, exponent: int) -> int:
        return int(base**exponent)

    square = Tool(functools.partial(power, exponent=2), name="square")
    assert square.execute(base=3) == 9
