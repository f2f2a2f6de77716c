"""Rendering the neutral schema tree in the three dialects providers speak.

* Gemini: the OpenAPI subset of ``FunctionDeclaration.parameters`` that the
  Gemini Developer API accepts: UPPERCASE types, ``nullable``, string-only enums,
  everything inlined, and no ``additionalProperties``: a ``dict[str, T]`` is
  declared as an ARRAY of ``{key, value}`` entries, turned back into a dict
  when the arguments arrive (``tools.arguments.normalize``). It has no ``$ref``,
  so a recursive type is refused here, and only here.
* JSON Schema: lowercase types, ``{"type": "null"}`` in unions, no ``nullable``;
  OpenAI's ``parameters`` and Anthropic's ``input_schema``. A recursive type is
  a ``$ref`` to the root's ``$defs``, as pydantic writes it.
* OpenAI strict: JSON Schema where every object is closed and lists all its
  properties as required; optional ones accept null instead. ``$ref`` takes no
  sibling keywords there, so a described reference is inlined one level (as the
  OpenAI Agents SDK's ``ensure_strict_json_schema`` does).
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
    RefNode,
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


def _plain_error(path: str, message: str) -> ToolSchemaError:
    return ToolSchemaError(message, path=path)


def render_gemini(node: Node, error: ErrorFactory = _plain_error) -> Schema:
    """The Gemini schema of ``node``; ``error`` builds the refusal of a recursive type."""
    schema = _gemini_core(node, error)
    if node.nullable and not isinstance(node, AnyNode):
        schema["nullable"] = True
    if node.description:
        schema["description"] = node.description
    return schema


def _gemini_core(node: Node, error: ErrorFactory) -> Schema:
    if isinstance(node, RefNode):
        raise error(
            "",
            f"{node.type_name} refers to itself, and Gemini's function declarations cannot "
            "say that (they have no $ref); use the tool with an OpenAI or Anthropic model, "
            "or give the type a fixed depth",
        )
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
            {"type": "ARRAY", "items": render_gemini(node.items, error)}, "array", node.constraints
        )
    if isinstance(node, ObjectNode):
        names = [prop.name for prop in node.properties]
        schema = {
            "type": "OBJECT",
            "properties": {p.name: render_gemini(p.node, error) for p in node.properties},
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
        return {"type": "ARRAY", "items": gemini_map_entry(render_gemini(node.values, error))}
    if isinstance(node, UnionNode):
        return {"anyOf": [render_gemini(option, error) for option in node.options]}
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
        self._referenced: dict[str, RefNode] = {}
        self._inlining: set[str] = set()

    def render(self, node: Node, path: str = "") -> Schema:
        """The schema of ``node``, with the ``$defs`` its references need at its root."""
        self._referenced = {}
        schema = self._render(node, path)
        definitions: Schema = {}
        while missing := [n for n in self._referenced if n not in definitions]:
            for name in missing:  # a definition may refer to further ones
                definitions[name] = self._render(self._referenced[name].target, path)
        if definitions:
            schema["$defs"] = dict(sorted(definitions.items()))
        return schema

    def _render(self, node: Node, path: str) -> Schema:
        if isinstance(node, RefNode):
            return self._reference(node, path)
        schema = self._core(node, path)
        if node.nullable and not isinstance(node, AnyNode):
            schema = _with_null(schema)
        if node.description:
            schema["description"] = node.description
        return schema

    def _reference(self, node: RefNode, path: str) -> Schema:
        self._referenced[node.name] = node
        if node.description and node.name not in self._inlining:
            # $ref with a sibling is refused by strict mode; inlining one level keeps
            # the description and is the same schema. Within that level a described
            # reference to the same type keeps its $ref and loses its description.
            self._inlining.add(node.name)
            inline = replace(node.target, description=node.description, nullable=node.nullable)
            try:
                return self._render(inline, path)
            finally:
                self._inlining.discard(node.name)
        schema: Schema = {"$ref": f"#/$defs/{node.name}"}
        return _with_null(schema) if node.nullable else schema

    def _core(self, node: Node, path: str) -> Schema:
        if isinstance(node, ScalarNode):
            schema: Schema = {"type": node.kind}
            if node.format and (not self.strict or node.format in _STRICT_FORMATS):
                schema["format"] = node.format
            return self._constraints(schema, node.kind, node.constraints)
        if isinstance(node, EnumNode):
            return self._enum(node.values)
        if isinstance(node, ArrayNode):
            schema = {"type": "array", "items": self._render(node.items, f"{path}[]")}
            if node.unique and not self.strict:
                schema["uniqueItems"] = True
            return self._constraints(schema, "array", node.constraints)
        if isinstance(node, ObjectNode):
            return self._object(node, path)
        if isinstance(node, MapNode):
            if self.strict:
                raise self._error(path, "OpenAI strict mode cannot express dict[str, T]")
            values = {} if isinstance(node.values, AnyNode) else self._render(node.values, path)
            return {"type": "object", "additionalProperties": values or True}
        if isinstance(node, UnionNode):
            return {"anyOf": [self._render(option, path) for option in node.options]}
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
            schema = self._render(child, sub)
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
