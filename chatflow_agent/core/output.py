"""Structured output: ``Agent(output_type=...)`` in each provider's own mechanism.

One type walk gives the schema every dialect renders (as for tool parameters):
OpenAI gets ``response_format`` ``json_schema`` (strict when strict mode can say
it), Gemini ``responseSchema`` (a required ``final_result`` function when the
agent has tools: Gemini takes no response schema with function calling),
Anthropic a forced ``final_result`` tool. A type
that is not an object is wrapped as ``{"result": ...}``, since all three want an
object at the root.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import OutputValidationError, ToolSchemaError
from ..schema.dialects import JsonSchemaRenderer, Schema, render_gemini
from ..schema.nodes import Node, ObjectNode, Property
from ..schema.walk import TypeWalker
from ..tools.arguments import normalize
from ..tools.compat import pydantic_compatible

FINAL_RESULT_TOOL = "final_result"


class OutputSchema:
    """The schema of an agent's final answer, and the check of a reply against it."""

    def __init__(self, output_type: Any, *, owner: str) -> None:
        walker = TypeWalker(f"{owner} output_type")
        node = walker.walk_parameter(output_type, "output")
        self.wrapped = not isinstance(node, ObjectNode)
        self.node: Node = (
            ObjectNode(properties=(Property(name="result", node=node, required=True),))
            if self.wrapped
            else node
        )
        self.output_type = output_type
        self.name = getattr(output_type, "__name__", "output")
        self._adapter: TypeAdapter[Any] = TypeAdapter(pydantic_compatible(output_type))
        try:
            self.strict_json: Schema | None = JsonSchemaRenderer(
                strict=True, error=walker.error
            ).render(self.node)
        except ToolSchemaError:
            self.strict_json = None  # e.g. dict[str, T]: sent without strict mode
        self.json: Schema = JsonSchemaRenderer(strict=False, error=walker.error).render(self.node)
        self._walker = walker

    @property
    def gemini(self) -> Schema:
        """Gemini's response schema; a recursive output type is refused here, only for Gemini."""
        return render_gemini(self.node, self._walker.error)

    def anthropic_tool(self) -> dict[str, Any]:
        return {
            "name": FINAL_RESULT_TOOL,
            "description": f"Give the final answer as a {self.name}; call this exactly once.",
            "input_schema": self.json,
        }

    def gemini_function(self) -> dict[str, Any]:
        return {
            "name": FINAL_RESULT_TOOL,
            "description": f"Give the final answer as a {self.name}; call this exactly once.",
            "parameters": self.gemini,
        }

    def openai_response_format(self) -> dict[str, Any]:
        schema = self.strict_json if self.strict_json is not None else self.json
        spec: dict[str, Any] = {"name": _schema_name(self.name), "schema": schema}
        spec["strict"] = self.strict_json is not None
        return {"type": "json_schema", "json_schema": spec}

    def validate_text(self, text: str | None, *, gemini: bool) -> Any:
        """Parse and validate a reply's text; raise OutputValidationError saying what failed."""
        try:
            value = json.loads(text or "")
        except json.JSONDecodeError as exc:
            raise OutputValidationError(f"the reply is not JSON: {exc}") from exc
        return self.validate_value(value, gemini=gemini)

    def validate_value(self, value: Any, *, gemini: bool) -> Any:
        value = normalize(self.node, value, from_model=True, gemini=gemini)
        if self.wrapped:
            if not isinstance(value, dict) or "result" not in value:
                raise OutputValidationError('the reply must be an object with a "result" key')
            value = value["result"]
        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                for err in exc.errors(include_url=False)
            )
            raise OutputValidationError(f"the reply does not fit {self.name}: {problems}") from exc


def _schema_name(name: str) -> str:
    # OpenAI's json_schema name: letters, digits, underscores and dashes, at most 64.
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)
    return cleaned[:64] or "output"
