"""Function specs of published custom tools: pure, checked against the vendors' own types."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types as genai

from chatflow_agent.errors import ToolArgumentsError, ToolSchemaError
from chatflow_agent.runtime_specs import RuntimeToolSpec, custom_tool_spec
from tests.sdk import wire

INPUTS = [
    {"name": "orderId", "type": "string", "description": "The order number.", "required": True},
    {"name": "weight", "type": "number", "description": "Parcel weight in kg."},
    {"name": "express", "type": "boolean", "required": True},
    {"name": "extra", "type": "json", "description": "Anything else the carrier needs."},
    {"name": "note"},
]


def record(**definition: Any) -> dict[str, Any]:
    return {"id": "pt-1", "toolId": "t-1", "name": "Order status",
            "definition": {"blocks": {}, "enabledForAI": True, "slug": "order_status",
                           "inputs": INPUTS, **definition}}


def test_the_slug_is_the_function_name_and_the_definition_description_wins() -> None:
    spec = custom_tool_spec(record(description="Look an order up.", returnDescription="Returns its status."),
                            "General description")
    assert spec.name == "order_status"
    assert spec.description == "Look an order up. Returns its status."


def test_the_tool_description_is_the_fallback_when_the_definition_has_none() -> None:
    spec = custom_tool_spec(record(returnDescription="Returns its status."), "Finds orders.")
    assert spec.description == "Finds orders. Returns its status."
    assert custom_tool_spec(record(description=""), "Finds orders.").description == "Finds orders."


def test_gemini_declaration_has_uppercase_types_and_each_input_description() -> None:
    declaration = custom_tool_spec(record(description="d")).to_gemini_declaration()
    genai.FunctionDeclaration.model_validate(declaration)
    props = declaration["parameters"]["properties"]
    assert props["orderId"] == {"type": "STRING", "description": "The order number."}
    assert props["weight"] == {"type": "NUMBER", "description": "Parcel weight in kg."}
    assert props["express"] == {"type": "BOOLEAN"}
    assert props["extra"]["type"] == "STRING" and "JSON text" in props["extra"]["description"]
    assert props["note"] == {"type": "STRING"}
    assert declaration["parameters"]["required"] == ["orderId", "express"]


def test_json_schema_serves_openai_and_anthropic_with_json_as_object_or_text() -> None:
    spec = custom_tool_spec(record(description="d"))
    wire.check_openai_tool(spec.to_openai_tool())
    wire.check_anthropic_tool(spec.to_anthropic_tool())
    params = spec.to_anthropic_tool()["input_schema"]
    assert params["required"] == ["orderId", "express"]
    assert params["properties"]["extra"] == {
        "anyOf": [{"type": "object"}, {"type": "string"}],
        "description": "Anything else the carrier needs.",
    }
    assert params["properties"]["weight"] == {"type": "number", "description": "Parcel weight in kg."}


def test_openai_strict_requires_everything_and_makes_optional_inputs_nullable() -> None:
    tool = custom_tool_spec(record(description="d")).to_openai_tool(strict=True)
    wire.check_openai_tool(tool)
    params = tool["function"]["parameters"]
    assert tool["function"]["strict"] is True
    assert params["additionalProperties"] is False
    assert params["required"] == ["orderId", "weight", "express", "extra", "note"]
    assert params["properties"]["weight"]["type"] == ["number", "null"]
    assert params["properties"]["orderId"]["type"] == "string"


def test_a_tool_without_inputs_declares_no_gemini_parameters() -> None:
    spec = custom_tool_spec(record(inputs=None, description="d"))
    assert "parameters" not in spec.to_gemini_declaration()
    assert spec.to_openai_parameters() == {"type": "object", "properties": {}}


def test_a_tool_not_enabled_for_ai_or_without_a_slug_is_refused() -> None:
    with pytest.raises(ToolSchemaError, match="not enabledForAI"):
        custom_tool_spec(record(enabledForAI=False))
    with pytest.raises(ToolSchemaError, match="no slug"):
        custom_tool_spec(record(slug=None))


def test_a_slug_gemini_cannot_take_fails_when_the_spec_is_built() -> None:
    with pytest.raises(ToolSchemaError, match="Gemini"):
        custom_tool_spec(record(slug="1st-order"))


def test_arguments_become_the_text_a_flow_input_carries() -> None:
    spec = custom_tool_spec(record(description="d"))
    bound = spec.bind({"orderId": "A-1", "weight": 2.0, "express": True, "extra": {"door": 3},
                       "note": None})
    assert bound == {"orderId": "A-1", "weight": "2", "express": "true", "extra": '{"door":3}'}
    assert spec.bind({"orderId": "A-1", "express": False, "extra": '{"a":1}'})["extra"] == '{"a":1}'


@pytest.mark.parametrize(("arguments", "problem"), [
    ({"express": True}, "missing required argument 'orderId'"),
    ({"orderId": "A", "express": "yes"}, "'express' must be a boolean"),
    ({"orderId": "A", "express": True, "weight": "2"}, "'weight' must be a number"),
    ({"orderId": "A", "express": True, "colour": "red"}, "unexpected argument"),
])
def test_arguments_that_do_not_fit_the_inputs_are_refused(arguments: dict[str, Any], problem: str) -> None:
    with pytest.raises(ToolArgumentsError, match=problem):
        custom_tool_spec(record(description="d")).bind(arguments)


def test_two_inputs_with_one_name_are_refused() -> None:
    with pytest.raises(ToolSchemaError, match="twice"):
        RuntimeToolSpec("dup", "d", inputs=custom_tool_spec(record()).inputs * 2)
