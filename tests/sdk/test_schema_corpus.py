"""The schema corpus in all three dialects, checked against the vendors' own type models."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from chatflow_agent import ToolSchemaError
from tests.sdk.corpus import CORPUS, SAME, STRICT_ERROR, Case
from tests.sdk.wire import (
    check_anthropic_tool,
    check_gemini_declaration,
    check_gemini_schema,
    check_openai_tool,
)

cases = pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
strict_cases = pytest.mark.parametrize(
    "case", [c for c in CORPUS if c.strict is not STRICT_ERROR], ids=lambda c: c.id
)


def _walk(schema: Any) -> list[dict[str, Any]]:
    if isinstance(schema, list):
        return [s for item in schema for s in _walk(item)]
    if not isinstance(schema, dict):
        return []
    found = [schema]
    for value in schema.values():
        found.extend(_walk(value))
    return found


def test_the_corpus_holds_at_least_forty_signatures() -> None:
    assert len(CORPUS) >= 40
    assert len({case.id for case in CORPUS}) == len(CORPUS)


@cases
def test_gemini_declares_each_corpus_signature_as_expected(case: Case) -> None:
    declaration = case.tool.to_gemini_declaration()
    check_gemini_declaration(declaration)
    parameters = declaration["parameters"]
    assert parameters["type"] == "OBJECT"
    assert parameters["properties"] == {"x": case.gemini}
    assert parameters.get("required", []) == (["x"] if case.required else [])


@cases
def test_every_corpus_declaration_passes_google_genai_in_developer_api_mode(case: Case) -> None:
    check_gemini_schema(case.tool.to_gemini_declaration()["parameters"])


def test_the_developer_api_check_refuses_additional_properties() -> None:
    with pytest.raises(ValueError, match="additionalProperties"):
        check_gemini_schema({"type": "OBJECT", "additionalProperties": {"type": "NUMBER"}})
    with pytest.raises(AssertionError, match="refuses"):
        check_gemini_schema({"type": "OBJECT", "properties": {"a": {"type": "STRING", "const": "x"}}})


@cases
def test_gemini_declarations_are_inlined_uppercase_and_free_of_json_schema_keywords(
    case: Case,
) -> None:
    for schema in _walk(case.tool.to_gemini_declaration()["parameters"]):
        assert "$ref" not in schema and "$defs" not in schema
        assert not {"exclusiveMinimum", "exclusiveMaximum", "uniqueItems", "const"} & set(schema)
        if isinstance(schema.get("type"), str):
            assert schema["type"].isupper()
        if "enum" in schema:
            assert all(isinstance(value, str) for value in schema["enum"])


@cases
def test_json_schema_dialect_renders_each_corpus_signature_as_expected(case: Case) -> None:
    parameters = case.tool.to_openai_parameters()
    jsonschema.Draft202012Validator.check_schema(parameters)
    assert parameters["type"] == "object"
    assert parameters["properties"] == {"x": case.json}
    assert parameters.get("required", []) == (["x"] if case.required else [])
    for schema in _walk(parameters):
        assert "nullable" not in schema
        if isinstance(schema.get("type"), str):
            assert schema["type"].islower()


@cases
def test_openai_and_anthropic_tool_entries_fit_their_sdk_types(case: Case) -> None:
    check_openai_tool(case.tool.to_openai_tool())
    check_anthropic_tool(case.tool.to_anthropic_tool())


@cases
def test_strict_dialect_renders_each_corpus_signature_or_refuses_it(case: Case) -> None:
    if case.strict is STRICT_ERROR:
        with pytest.raises(ToolSchemaError, match=r"probe.*parameter 'x.*strict"):
            case.tool.to_openai_parameters(strict=True)
        return
    parameters = case.tool.to_openai_parameters(strict=True)
    jsonschema.Draft202012Validator.check_schema(parameters)
    check_openai_tool(case.tool.to_openai_tool(strict=True))
    assert parameters == {
        "type": "object",
        "properties": {"x": case.strict},
        "required": ["x"],
        "additionalProperties": False,
    }


@strict_cases
def test_every_strict_object_is_closed_and_requires_all_its_properties(case: Case) -> None:
    for schema in _walk(case.tool.to_openai_parameters(strict=True)):
        if schema.get("type") == "object":
            assert schema["additionalProperties"] is False
            assert schema["required"] == list(schema["properties"])
        assert not {"default", "minLength", "maxLength", "uniqueItems"} & set(schema)


@cases
def test_each_corpus_sample_fits_the_json_schema_and_reaches_the_function(case: Case) -> None:
    jsonschema.validate({"x": case.sample}, case.tool.to_openai_parameters())
    tool = case.tool
    arguments = tool.bind_model_arguments({"x": case.sample}, gemini=False)
    assert tool.execute(**arguments) == case.expected


@cases
async def test_each_corpus_sample_as_gemini_sends_it_reaches_the_function(case: Case) -> None:
    sample = case.sample if case.gemini_sample is SAME else case.gemini_sample
    tool = case.tool
    arguments = tool.bind_model_arguments({"x": sample}, gemini=True)
    assert await tool.execute_async(**arguments) == case.expected
