"""Issue 22, defect 6: recursive types, as pydantic-ai and the OpenAI Agents SDK take them.

Written the way the peers' schema tests are: build the tool, compare its schema with
the expected dict, then check it with the validators the corpus tests use (JSON
Schema meta-validation, the vendor SDKs' tool types, OpenAI's strict-mode rules).
OpenAI and Anthropic get ``$defs``/``$ref``; only Gemini, which has no ``$ref``,
refuses, and only when its declaration is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import jsonschema
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from chatflow_agent import Agent, Runner, ToolSchemaError, tool
from chatflow_agent.testing import TestModel
from tests.sdk.wire import check_anthropic_tool, check_openai_tool


class Category(BaseModel):
    """A category and its subcategories."""

    name: str
    children: list[Category] = []


@dataclass
class Employee:
    name: str
    manager: Employee | None = None


class Comment(TypedDict):
    text: str
    replies: list[Comment]


def _walk(schema: Any) -> list[dict[str, Any]]:
    if isinstance(schema, list):
        return [s for item in schema for s in _walk(item)]
    if not isinstance(schema, dict):
        return []
    return [schema, *(s for value in schema.values() for s in _walk(value))]


def _check_strict(parameters: dict[str, Any]) -> None:
    """OpenAI's strict-mode rules, as the corpus tests check them."""
    jsonschema.Draft202012Validator.check_schema(parameters)
    for schema in _walk(parameters):
        if schema.get("type") == "object":
            assert schema["additionalProperties"] is False
            assert schema["required"] == list(schema["properties"])
        if "$ref" in schema:
            assert list(schema) == ["$ref"], f"strict mode refuses siblings of $ref: {schema}"
        assert not {"default", "minLength", "maxLength", "uniqueItems"} & set(schema)


# -- pydantic-ai test_tools.py: a recursive model argument is a $ref into $defs


def test_a_recursive_pydantic_model_is_a_ref_into_defs() -> None:
    @tool
    def file_under(category: Category) -> str:
        """File something under a category."""
        return category.name

    assert file_under.to_openai_parameters() == {
        "type": "object",
        "properties": {"category": {"$ref": "#/$defs/Category"}},
        "required": ["category"],
        "$defs": {
            "Category": {
                "type": "object",
                "description": "A category and its subcategories.",
                "properties": {
                    "name": {"type": "string"},
                    "children": {
                        "type": "array",
                        "items": {"$ref": "#/$defs/Category"},
                        "default": [],
                    },
                },
                "required": ["name"],
            }
        },
    }
    jsonschema.Draft202012Validator.check_schema(file_under.to_openai_parameters())
    check_openai_tool(file_under.to_openai_tool())
    check_anthropic_tool(file_under.to_anthropic_tool())


# -- openai-agents test_function_schema.py: strict mode keeps its rules through $ref


def test_a_recursive_type_in_strict_mode_keeps_every_strict_rule() -> None:
    @tool
    def org_chart(boss: Employee, tree: Category) -> int:
        """Count people."""
        return 1

    parameters = org_chart.to_openai_parameters(strict=True)
    _check_strict(parameters)
    check_openai_tool(org_chart.to_openai_tool(strict=True))
    assert parameters["$defs"]["Employee"]["properties"]["manager"] == {
        "anyOf": [{"$ref": "#/$defs/Employee"}, {"type": "null"}]
    }
    assert sorted(parameters["$defs"]) == ["Category", "Employee"]


def test_a_described_recursive_parameter_is_inlined_once_so_its_ref_has_no_siblings() -> None:
    @tool
    def file_under(category: Annotated[Category, Field(description="Where it goes.")]) -> str:
        """File something under a category."""
        return category.name

    strict = file_under.to_openai_parameters(strict=True)
    _check_strict(strict)
    assert strict["properties"]["category"]["description"] == "Where it goes."
    assert strict["properties"]["category"]["properties"]["children"]["anyOf"][0] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Category"},
    }


def test_a_recursive_typed_dict_and_dataclass_are_refs_too() -> None:
    @tool
    def thread(first: Comment, author: Employee) -> int:
        """Count a thread's replies."""
        return len(first["replies"])

    parameters = thread.to_openai_parameters()
    assert parameters["properties"] == {
        "first": {"$ref": "#/$defs/Comment"},
        "author": {"$ref": "#/$defs/Employee"},
    }
    assert parameters["$defs"]["Comment"]["properties"]["replies"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Comment"},
    }


def test_nested_recursive_arguments_are_validated_at_every_depth() -> None:
    @tool
    def depth(category: Category) -> int:
        """How deep a category tree goes."""

        def down(c: Category) -> int:
            return 1 + max((down(child) for child in c.children), default=0)

        return down(category)

    sent = {"category": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}
    jsonschema.validate(sent, depth.to_openai_parameters())
    assert depth.execute(**depth.bind_model_arguments(sent, gemini=False)) == 3
    bad = {"category": {"name": "a", "children": [{"name": 7}]}}
    with pytest.raises(Exception, match=r"category.children.0.name"):
        depth.execute(**bad)


# -- Gemini: refused with the type's name and the reason, when the declaration is asked for


def test_gemini_s_declaration_of_a_recursive_type_is_refused_naming_the_type_and_why() -> None:
    @tool
    def file_under(category: Category) -> str:
        """File something under a category."""
        return category.name

    with pytest.raises(ToolSchemaError) as refused:
        file_under.to_gemini_declaration()
    message = str(refused.value)
    assert "file_under" in message and "Category refers to itself" in message
    assert "Gemini" in message and "$ref" in message


def test_a_gemini_agent_with_a_recursive_tool_is_refused_when_it_is_built() -> None:
    @tool
    def file_under(category: Category) -> str:
        """File something under a category."""
        return category.name

    Agent("a", tools=[file_under], model="gpt-4o")
    Agent("a", tools=[file_under], model="claude-sonnet-4-5")
    with pytest.raises(ToolSchemaError, match="Category refers to itself"):
        Agent("a", tools=[file_under], model="gemini-2.5-flash")


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-5"])
def test_a_recursive_tool_runs_through_openai_s_and_anthropic_s_code_paths(model: str) -> None:
    seen: list[Category] = []

    @tool
    def file_under(category: Category) -> str:
        """File something under a category."""
        seen.append(category)
        return category.name

    test_model = TestModel()
    agent = Agent("a", tools=[file_under], model=model, provider=test_model)
    result = Runner(agent).run("s", "file it")

    assert result.tool_calls_executed == ["file_under"]
    sent = test_model.exchanges[1].messages[-2].tool_calls[0].arguments  # type: ignore[union-attr]
    jsonschema.validate(sent, file_under.to_openai_parameters())
    assert seen[0].children[0].name == "a"  # the test model went into the recursion


def test_a_recursive_output_type_works_for_openai_and_is_refused_for_gemini() -> None:
    result = Runner(Agent("a", model="gpt-4o", output_type=Category, provider=TestModel())).run(
        "s", "make one"
    )
    assert isinstance(result.output, Category)
    with pytest.raises(ToolSchemaError, match="Category refers to itself"):
        Agent("a", model="gemini-2.5-flash", output_type=Category)


# -- an MCP server's recursive inputSchema (FastMCP writes pydantic's $defs/$ref) reads the same way


def test_an_mcp_tool_with_a_recursive_input_schema_is_a_ref_for_openai_and_refused_for_gemini() -> None:
    import mcp.types

    from chatflow_agent.mcp import MCPServerStdio, MCPTool

    # What FastMCP lists for `def file_under(category: Category)`: pydantic's schema.
    schema = {
        "type": "object",
        "title": "file_underArguments",
        "properties": {"category": {"$ref": "#/$defs/Category"}},
        "required": ["category"],
        "$defs": {
            "Category": {
                "type": "object",
                "title": "Category",
                "description": "A category and its subcategories.",
                "properties": {
                    "name": {"type": "string", "title": "Name"},
                    "children": {
                        "type": "array",
                        "items": {"$ref": "#/$defs/Category"},
                        "default": [],
                        "title": "Children",
                    },
                },
                "required": ["name"],
            }
        },
    }
    listed = mcp.types.Tool(name="file_under", description="File it.", inputSchema=schema)
    server = MCPServerStdio("unused-command", name="catalog")  # never started: the schema is read offline
    remote = MCPTool(server, listed)

    parameters = remote.to_openai_parameters()
    jsonschema.Draft202012Validator.check_schema(parameters)
    assert parameters["properties"]["category"] == {"$ref": "#/$defs/Category"}
    assert parameters["$defs"]["Category"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}
    _check_strict(remote.to_openai_parameters(strict=True))
    check_anthropic_tool(remote.to_anthropic_tool())
    sent = {"category": {"name": "a", "children": [{"name": "b", "children": []}]}}
    jsonschema.validate(sent, parameters)
    with pytest.raises(ToolSchemaError, match=r"catalog.*file_under.*Category refers to itself"):
        remote.to_gemini_declaration()
