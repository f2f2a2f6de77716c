"""A JSON Schema written elsewhere (an MCP server's ``inputSchema``) read into our schema tree.

Rendering the tree gives the same dialects and the same checks as ``@tool``:
Gemini's Developer-API subset, JSON Schema and OpenAI strict mode. Local
``$ref``s are inlined; a recursive one becomes a ``RefNode``, as a recursive
Python type does: ``$defs``/``$ref`` for OpenAI and Anthropic, refused for Gemini.
"""

from __future__ import annotations

from typing import Any

from .nodes import (
    NO_DEFAULT,
    AnyNode,
    ArrayNode,
    Constraints,
    EnumNode,
    MapNode,
    Node,
    ObjectNode,
    Property,
    RefNode,
    ScalarKind,
    ScalarNode,
    UnionNode,
)
from .walk import TypeWalker

_SCALARS: dict[str, ScalarKind] = {
    "string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
}  # fmt: skip
_CONSTRAINTS = {
    "minimum": "minimum", "maximum": "maximum", "exclusiveMinimum": "exclusive_minimum",
    "exclusiveMaximum": "exclusive_maximum", "multipleOf": "multiple_of",
    "minLength": "min_length", "maxLength": "max_length", "minItems": "min_length",
    "maxItems": "max_length", "pattern": "pattern",
}  # fmt: skip


class JsonSchemaReader:
    """Reads one schema; errors name the tool and the path, like the type walk's."""

    def __init__(self, root: dict[str, Any], walker: TypeWalker) -> None:
        self._defs: dict[str, Any] = {**root.get("definitions", {}), **root.get("$defs", {})}
        self._walker = walker
        self._refs: list[str] = []
        self._recursive: set[str] = set()
        self.definitions: dict[str, Node] = {}

    def read(self, schema: Any, path: str = "") -> Node:
        if schema is True or schema == {}:
            return AnyNode()
        if not isinstance(schema, dict):
            raise self._walker.error(path, f"schema {schema!r} is not an object")
        if "$ref" in schema:
            return self._ref(schema, path)
        node = self._core(schema, path)
        constraints = Constraints(
            **{ours: schema[key] for key, ours in _CONSTRAINTS.items() if key in schema}
        )
        nullable = node.nullable or _allows_null(schema)
        description = schema.get("description") or node.description
        return _with(node, description=description, nullable=nullable, constraints=constraints)

    def _ref(self, schema: dict[str, Any], path: str) -> Node:
        ref = str(schema["$ref"])
        name = ref.rsplit("/", 1)[-1]
        if name not in self._defs or not ref.startswith("#/"):
            raise self._walker.error(path, f"cannot resolve $ref {ref!r}")
        if name in self._refs:
            self._recursive.add(name)
            node: Node = RefNode(name=name, type_name=name, definitions=self.definitions)
            return _with(node, description=schema.get("description"), nullable=_allows_null(schema))
        self._refs.append(name)
        try:
            node = self.read(self._defs[name], path)
        finally:
            self._refs.pop()
        if name in self._recursive:
            self.definitions[name] = node
            node = RefNode(name=name, type_name=name, definitions=self.definitions)
        description = schema.get("description") or node.description
        return _with(node, description=description, nullable=node.nullable or _allows_null(schema))

    def _core(self, schema: dict[str, Any], path: str) -> Node:
        if "enum" in schema or "const" in schema:
            values = schema.get("enum", [schema.get("const")])
            kept = tuple(v for v in values if v is not None)
            if not kept or not all(isinstance(v, str | int | float | bool) for v in kept):
                raise self._walker.error(path, f"enum {values!r} needs str, int, float or bool values")
            return EnumNode(values=kept, nullable=None in values)
        options = schema.get("anyOf") or schema.get("oneOf")
        if options:
            return self._union(options, path)
        kind = schema.get("type")
        kinds = [k for k in (kind if isinstance(kind, list) else [kind]) if k not in (None, "null")]
        if len(kinds) > 1:
            return self._union([{**schema, "type": k} for k in kinds], path)
        kind = kinds[0] if kinds else ("object" if "properties" in schema else None)
        if kind in _SCALARS:
            return ScalarNode(kind=_SCALARS[kind], format=schema.get("format"))
        if kind == "array":
            return ArrayNode(items=self.read(schema.get("items", {}), f"{path}[]"),
                             unique=bool(schema.get("uniqueItems")))  # fmt: skip
        if kind == "object":
            return self._object(schema, path)
        if kind is None:
            return AnyNode()
        raise self._walker.error(path, f"unsupported type {kind!r}")

    def _union(self, options: list[Any], path: str) -> Node:
        nodes = [self.read(o, path) for o in options if not _is_null(o)]
        nullable = any(_is_null(o) for o in options)
        if len(nodes) == 1:
            return _with(nodes[0], nullable=True) if nullable else nodes[0]
        return UnionNode(options=tuple(nodes), nullable=nullable)

    def _object(self, schema: dict[str, Any], path: str) -> Node:
        properties = schema.get("properties") or {}
        if not properties:
            extra = schema.get("additionalProperties", True)
            values = self.read(extra if isinstance(extra, dict) else {}, f"{path}.*")
            return MapNode(values=values)
        required = set(schema.get("required") or ())
        props = tuple(
            Property(name=name, node=self.read(sub, _join(path, name)), required=name in required,
                     default=sub.get("default", NO_DEFAULT) if isinstance(sub, dict) else NO_DEFAULT)
            for name, sub in properties.items()
        )  # fmt: skip
        return ObjectNode(properties=props)


def _with(node: Node, **changes: Any) -> Node:
    from dataclasses import replace

    current = {k: v for k, v in changes.items() if v is not None}
    if "constraints" in current:
        current["constraints"] = node.constraints.merged(current["constraints"])
    return replace(node, **current)


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null" and len(schema) == 1


def _allows_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return isinstance(kind, list) and "null" in kind


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
