"""Rendering the neutral schema tree in the three dialects providers speak.

* Gemini: the OpenAPI subset of ``FunctionDeclaration.parameters`` that the
  Gemini Developer API accepts: UPPERCASE types, ``nullable``, string-only enums,
  everything inlined, and no ``additionalProperties``: a ``dict[str, T]`` is
  declared as an ARRAY of ``{key, value}`` entries, turned back into a dict
  when the arguments arrive (``tools.arguments.normalize``).
* JSON Schema: lowercase types, ``{"type": "null"}`` in unions, no ``nullable``;
  OpenAI's ``parameters`` and Anthropic's ``input_schema``.
* OpenAI strict: JSON Schema where every object is closed and lists all its
  properties as required; optional ones accept null instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..errors import ToolSchemaError
from .nodes import (
    AnyNode,
    ArrayNode,
    Constraints,
    EnumNode,
    EnumValue,
    MapNode,
    Node,
    ObjectNode,
    ScalarNode,
    UnionNode,
)
from .walk import gemini_enum_text

Schema = dict[str, Any]
ErrorFactory = Callable[[str, str], ToolSchemaError]

_JSON_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}
# OpenAI's strict mode rejects keywords outside this list with a 400.
_STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6"}
_STRICT_FORMATS |= {"uuid"}


def _json_type(value: EnumValue) -> str:
    return _JSON_TYPES.get(type(value), "string")


def _is_jsonable(value: object) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


# ---------------------------------------------------------------- Gemini


def render_gemini(node: Node) -> Schema:
    schema = _gemini_core(node)
    if node.nullable and not isinstance(node, AnyNode):
        schema["nullable"] = True
    if node.description:
        schema["description"] = node.description
    return schema


def _gemini_core(node: Node) -> Schema:
    if isinstance(node, ScalarNode):
        schema: Schema = {"type": node.kind.upper()}
        if node.format == "date-time":
            schema["format"] = node.format
        return _gemini_constraints(schema, node.kind, node.constraints)
    if isinstance(node, EnumNode):
        return {
            "type": "STRING",
            "format": "enum",
            "enum": [gemini_enum_text(v) for v in node.values],
        }
    if isinstance(node, ArrayNode):
        return _gemini_constraints(
            {"type": "ARRAY", "items": render_gemini(node.items)}, "array", node.constraints
        )
    if isinstance(node, ObjectNode):
        names = [prop.name for prop in node.properties]
        schema = {
            "type": "OBJECT",
            "properties": {p.name: render_gemini(p.node) for p in node.properties},
        }
        required = [prop.name for prop in node.properties if prop.required]
        if required:
            schema["required"] = required
        if len(names) > 1:
            schema["propertyOrdering"] = names
        return schema
    if isinstance(node, MapNode):
        if isinstance(node.values, AnyNode):
            return {"type": "OBJECT"}
        return {"type": "ARRAY", "items": gemini_map_entry(render_gemini(node.values))}
    if isinstance(node, UnionNode):
        return {"anyOf": [render_gemini(option) for option in node.options]}
    return {}


def gemini_map_entry(value: Schema) -> Schema:
    """One ``{key, value}`` entry of a mapping, as Gemini is told to send it."""
    return {
        "type": "OBJECT",
        "description": "One entry of a mapping: a key and its value.",
        "properties": {"key": {"type": "STRING"}, "value": value},
        "required": ["key", "value"],
        "propertyOrdering": ["key", "value"],
    }


def _gemini_constraints(schema: Schema, kind: str, rules: Constraints) -> Schema:
    if kind in ("integer", "number"):
        # Gemini has no exclusive bounds: tighten for integers, and for numbers
        # keep the inclusive bound and let argument validation reject the edge.
        step = 1 if kind == "integer" else 0
        if rules.exclusive_minimum is not None:
            schema["minimum"] = rules.exclusive_minimum + step
        if rules.exclusive_maximum is not None:
            schema["maximum"] = rules.exclusive_maximum - step
        if rules.minimum is not None:
            schema["minimum"] = rules.minimum
        if rules.maximum is not None:
            schema["maximum"] = rules.maximum
    elif kind == "string":
        _set(schema, "minLength", rules.min_length)
        _set(schema, "maxLength", rules.max_length)
        _set(schema, "pattern", rules.pattern)
    elif kind == "array":
        _set(schema, "minItems", rules.min_length)
        _set(schema, "maxItems", rules.max_length)
    return schema


def _set(schema: Schema, key: str, value: object) -> None:
    if value is not None:
        schema[key] = value


# ---------------------------------------------------------------- JSON Schema


class JsonSchemaRenderer:
    """Renders JSON Schema; with ``strict`` it follows OpenAI's structured-output rules."""

    def __init__(self, *, strict: bool, error: ErrorFactory) -> None:
        self.strict = strict
        self._error = error

    def render(self, node: Node, path: str = "") -> Schema:
        schema = self._core(node, path)
        if node.nullable and not isinstance(node, AnyNode):
            schema = _with_null(schema)
        if node.description:
            schema["description"] = node.description
        return schema

    def _core(self, node: Node, path: str) -> Schema:
        if isinstance(node, ScalarNode):
            schema: Schema = {"type": node.kind}
            if node.format and (not self.strict or node.format in _STRICT_FORMATS):
                schema["format"] = node.format
            return self._constraints(schema, node.kind, node.constraints)
        if isinstance(node, EnumNode):
            return self._enum(node.values)
        if isinstance(node, ArrayNode):
            schema = {"type": "array", "items": self.render(node.items, f"{path}[]")}
            if node.unique and not self.strict:
                schema["uniqueItems"] = True
            return self._constraints(schema, "array", node.constraints)
        if isinstance(node, ObjectNode):
            return self._object(node, path)
        if isinstance(node, MapNode):
            if self.strict:
                raise self._error(path, "OpenAI strict mode cannot express dict[str, T]")
            values = {} if isinstance(node.values, AnyNode) else self.render(node.values, path)
            return {"type": "object", "additionalProperties": values or True}
        if isinstance(node, UnionNode):
            return {"anyOf": [self.render(option, path) for option in node.options]}
        if self.strict:
            raise self._error(path, "OpenAI strict mode needs a concrete type, not Any")
        return {}

    def _enum(self, values: tuple[EnumValue, ...]) -> Schema:
        groups: dict[str, list[EnumValue]] = {}
        for value in values:
            groups.setdefault(_json_type(value), []).append(value)
        if len(groups) == 1:
            ((kind, members),) = groups.items()
            return {"type": kind, "enum": members}
        if self.strict:
            return {"anyOf": [{"type": k, "enum": v} for k, v in groups.items()]}
        return {"enum": list(values)}

    def _object(self, node: ObjectNode, path: str) -> Schema:
        properties: Schema = {}
        for prop in node.properties:
            sub = f"{path}.{prop.name}" if path else prop.name
            child = prop.node
            if self.strict and not prop.required:
                child = replace(child, nullable=True)
            schema = self.render(child, sub)
            if not self.strict and prop.has_default and _is_jsonable(prop.default):
                schema["default"] = prop.default
            properties[prop.name] = schema
        result: Schema = {"type": "object", "properties": properties}
        required = [p.name for p in node.properties if p.required or self.strict]
        if required or self.strict:
            result["required"] = required
        if self.strict:
            result["additionalProperties"] = False
        return result

    def _constraints(self, schema: Schema, kind: str, rules: Constraints) -> Schema:
        if kind in ("integer", "number"):
            _set(schema, "minimum", rules.minimum)
            _set(schema, "maximum", rules.maximum)
            _set(schema, "exclusiveMinimum", rules.exclusive_minimum)
            _set(schema, "exclusiveMaximum", rules.exclusive_maximum)
            _set(schema, "multipleOf", rules.multiple_of)
        elif kind == "string":
            if not self.strict:
                _set(schema, "minLength", rules.min_length)
                _set(schema, "maxLength", rules.max_length)
            _set(schema, "pattern", rules.pattern)
        elif kind == "array":
            _set(schema, "minItems", rules.min_length)
            _set(schema, "maxItems", rules.max_length)
        return schema


def _with_null(schema: Schema) -> Schema:
    if list(schema) == ["anyOf"]:
        return {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}
