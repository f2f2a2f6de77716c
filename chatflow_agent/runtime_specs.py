"""Function specs for the runtime's tools: pure code, no I/O.

A published custom tool with ``enabledForAI`` is a function a model can call
(docs/agents.md: native and custom tools, and a description with one fallback):

* its name is the definition's ``slug``;
* its description is ``definition.description``, else the tool's own
  description, with ``returnDescription`` appended;
* each ``ToolInput`` is a parameter: its ``description`` is the parameter's,
  its ``type`` maps to a schema type (``json`` is an object or JSON text), and
  ``required`` puts it in ``required``.

:class:`RuntimeToolSpec` renders the same three dialects as ``@tool``: the Gemini
declaration (UPPERCASE types), JSON Schema for OpenAI and Anthropic, and
OpenAI's strict variant. :meth:`RuntimeToolSpec.bind` checks a model's
arguments against the inputs and turns them into the text values a flow's
``executeTool`` action would pass.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from .errors import ToolArgumentsError, ToolSchemaError
from .schema.declarations import ProviderDeclarations
from .schema.limits import check_tool_name

if TYPE_CHECKING:
    from .tools import Tool

InputType = Literal["string", "number", "boolean", "json"]
_INPUT_TYPES: frozenset[str] = frozenset({"string", "number", "boolean", "json"})
_JSON_TEXT_HINT = "JSON text."


def function_description(tool_description: str | None, definition: Mapping[str, Any]) -> str:
    """A tool's description: definition.description, else Tool.description, plus returnDescription.

    The same rule as the registry's agent cache (runtime/registry/views.py).
    """
    text = definition.get("description") or tool_description or ""
    if definition.get("returnDescription"):
        text = f"{text} {definition['returnDescription']}".strip()
    return str(text)


@dataclass(frozen=True)
class RuntimeInput:
    """One ``ToolInput`` of a custom tool, as a function parameter."""

    name: str
    type: InputType = "string"
    description: str | None = None
    required: bool = False

    def _described(self, schema: dict[str, Any], extra: str | None = None) -> dict[str, Any]:
        text = " ".join(part for part in (self.description, extra) if part)
        if text:
            schema["description"] = text
        return schema

    def gemini(self) -> dict[str, Any]:
        if self.type == "json":  # Gemini cannot declare an OBJECT without properties
            return self._described({"type": "STRING"}, _JSON_TEXT_HINT)
        return self._described({"type": self.type.upper()})

    def json_schema(self, *, strict: bool) -> dict[str, Any]:
        if self.type == "json":
            if strict:  # strict mode closes every object: an open one can only be text
                schema: dict[str, Any] = {"type": "string"}
                extra: str | None = _JSON_TEXT_HINT
            else:
                schema = {"anyOf": [{"type": "object"}, {"type": "string"}]}
                extra = None
        else:
            schema, extra = {"type": self.type}, None
        if strict and not self.required:
            if "anyOf" in schema:
                schema["anyOf"].append({"type": "null"})
            else:
                schema["type"] = [schema["type"], "null"]
        return self._described(schema, extra)


@dataclass(frozen=True)
class RuntimeToolSpec(ProviderDeclarations):
    """A runtime tool's function spec, in every provider's dialect."""

    name: str
    description: str
    inputs: tuple[RuntimeInput, ...] = ()

    def __post_init__(self) -> None:
        check_tool_name(self.name, owner=self.name)
        seen: set[str] = set()
        for item in self.inputs:
            if item.name in seen:
                raise ToolSchemaError(
                    f"tool {self.name!r} declares input {item.name!r} twice",
                    function=self.name, path=item.name,
                )
            seen.add(item.name)

    @property
    def required(self) -> list[str]:
        return [i.name for i in self.inputs if i.required]

    def to_gemini_declaration(self) -> dict[str, Any]:
        declaration: dict[str, Any] = {"name": self.name}
        if self.description:
            declaration["description"] = self.description
        if self.inputs:  # Gemini rejects an OBJECT with no properties
            parameters: dict[str, Any] = {
                "type": "OBJECT",
                "properties": {i.name: i.gemini() for i in self.inputs},
            }
            if self.required:
                parameters["required"] = self.required
            declaration["parameters"] = parameters
        return declaration

    def to_openai_parameters(self, *, strict: bool = False) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {i.name: i.json_schema(strict=strict) for i in self.inputs},
        }
        if strict:
            schema["required"] = [i.name for i in self.inputs]
            schema["additionalProperties"] = False
        elif self.required:
            schema["required"] = self.required
        return schema

    # ---------------------------------------------------------------- arguments

    def bind(self, arguments: Mapping[str, Any]) -> dict[str, str]:
        """Check a model's arguments; return each one as the text a flow input carries.

        A null for an optional input means "left out" (OpenAI strict mode sends it).
        Numbers and booleans read as they would in a template (``3``, ``true``);
        ``json`` values are compact JSON, or the model's JSON text unchanged.
        """
        by_name = {i.name: i for i in self.inputs}
        unknown = sorted(k for k in arguments if k not in by_name)
        if unknown:
            raise self._error(f"unexpected argument(s): {', '.join(unknown)}")
        out: dict[str, str] = {}
        for item in self.inputs:
            value = arguments.get(item.name)
            if value is None:
                if item.required:
                    raise self._error(f"missing required argument {item.name!r}")
                continue
            out[item.name] = self._text(item, value)
        return out

    def _text(self, item: RuntimeInput, value: Any) -> str:
        if item.type == "json":
            return value if isinstance(value, str) else _compact(value)
        if item.type == "boolean" and isinstance(value, bool):
            return "true" if value else "false"
        if item.type == "number" and isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                raise self._error(f"argument {item.name!r} must be a finite number")
            if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
                return str(int(value))
            return repr(value) if isinstance(value, float) else str(value)
        if item.type == "string" and isinstance(value, str):
            return value
        raise self._error(
            f"argument {item.name!r} must be a {item.type}, not {type(value).__name__}"
        )

    def _error(self, message: str) -> ToolArgumentsError:
        return ToolArgumentsError(f"tool {self.name!r}: {message}", tool_name=self.name)


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ToolArgumentsError(f"argument is not JSON: {exc}") from exc


def _inputs(raw: Sequence[Mapping[str, Any]] | None, owner: str) -> tuple[RuntimeInput, ...]:
    inputs: list[RuntimeInput] = []
    for index, item in enumerate(raw or ()):
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ToolSchemaError(
                f"tool {owner!r}: input #{index} has no name", function=owner, path=f"inputs.{index}"
            )
        kind = item.get("type") or "string"
        if kind not in _INPUT_TYPES:
            raise ToolSchemaError(
                f"tool {owner!r}: input {name!r} has unknown type {kind!r}",
                function=owner, path=f"inputs.{name}",
            )
        description = item.get("description")
        inputs.append(RuntimeInput(name=name, type=cast(InputType, kind),
                                   description=description or None,
                                   required=bool(item.get("required"))))
    return tuple(inputs)


def custom_tool_spec(record: Mapping[str, Any], tool_description: str | None = None) -> RuntimeToolSpec:
    """The spec of a published custom tool.

    ``record`` is the ``tool:{publishedToolId}`` value (``{"id", "toolId", "name",
    "definition"}``); ``tool_description`` is the tool's own (registry) description.
    Raises ToolSchemaError when the tool is not exposed to AI or its slug does not
    fit every provider's name rule.
    """
    definition: Mapping[str, Any] = record.get("definition") or {}
    label = str(record.get("id") or record.get("name") or "?")
    if not definition.get("enabledForAI"):
        raise ToolSchemaError(f"published tool {label!r} is not enabledForAI", function=label)
    slug = definition.get("slug")
    if not isinstance(slug, str) or not slug:
        raise ToolSchemaError(f"published tool {label!r} has no slug", function=label, path="slug")
    return RuntimeToolSpec(
        name=slug,
        description=function_description(tool_description, definition),
        inputs=_inputs(definition.get("inputs"), slug),
    )


def agent_cache_spec(entry: Mapping[str, Any]) -> RuntimeToolSpec:
    """The spec of a custom tool entry of an ``ai-agent:{id}`` projection.

    The registry already chose its description (fallback and returnDescription applied).
    """
    slug = entry.get("slug")
    label = str(entry.get("toolId") or "?")
    if not isinstance(slug, str) or not slug:
        raise ToolSchemaError(f"agent tool {label!r} has no slug", function=label, path="slug")
    return RuntimeToolSpec(name=slug, description=str(entry.get("description") or ""),
                           inputs=_inputs(entry.get("inputs"), slug))


def native_spec(item: Tool[Any, Any]) -> dict[str, Any]:
    """What ``native-tool:{name}`` holds (written by the workers that serve the tool, read by
    ``NativeToolProxy``): the tool's declaration in every dialect."""
    try:
        strict: dict[str, Any] | None = item.to_openai_parameters(strict=True)
    except ToolSchemaError:
        strict = None
    return {"name": item.name, "description": item.description,
            "gemini": item.to_gemini_declaration(), "parameters": item.to_openai_parameters(),
            "strictParameters": strict}


__all__ = [
    "RuntimeInput",
    "RuntimeToolSpec",
    "agent_cache_spec",
    "custom_tool_spec",
    "function_description",
    "native_spec",
]
