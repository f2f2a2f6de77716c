"""The provider-neutral schema tree that the type walk builds and each dialect renders."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypeAlias

ScalarKind: TypeAlias = Literal["string", "integer", "number", "boolean"]
EnumValue: TypeAlias = str | int | float | bool


class _NoDefault:
    """Sentinel type for "this parameter has no default"."""

    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT = _NoDefault()


@dataclass(frozen=True)
class Constraints:
    """Validation keywords; lengths apply to strings and arrays alike."""

    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    multiple_of: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    def merged(self, other: Constraints) -> Constraints:
        """Return these constraints overridden by the ones set in ``other``."""
        changes = {f.name: getattr(other, f.name) for f in fields(other)}
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def is_empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))


@dataclass(frozen=True, kw_only=True)
class Node:
    """Common attributes of every schema node."""

    description: str | None = None
    nullable: bool = False
    constraints: Constraints = field(default_factory=Constraints)


@dataclass(frozen=True, kw_only=True)
class ScalarNode(Node):
    kind: ScalarKind
    format: str | None = None


@dataclass(frozen=True, kw_only=True)
class EnumNode(Node):
    values: tuple[EnumValue, ...]


@dataclass(frozen=True, kw_only=True)
class ArrayNode(Node):
    items: Node
    unique: bool = False


@dataclass(frozen=True, kw_only=True)
class Property:
    name: str
    node: Node
    required: bool
    default: Any = NO_DEFAULT

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


@dataclass(frozen=True, kw_only=True)
class ObjectNode(Node):
    properties: tuple[Property, ...] = ()


@dataclass(frozen=True, kw_only=True)
class MapNode(Node):
    values: Node


@dataclass(frozen=True, kw_only=True)
class UnionNode(Node):
    options: tuple[Node, ...]


@dataclass(frozen=True, kw_only=True)
class AnyNode(Node):
    """A value of any JSON type (``Any``, or the items of a bare ``list``)."""


@dataclass(frozen=True, kw_only=True)
class RefNode(Node):
    """A reference to a named type that refers to itself (a tree, a linked list).

    JSON Schema renders it as ``{"$ref": "#/$defs/<name>"}`` with the definition in
    the root's ``$defs``; Gemini's declarations have no ``$ref``, so there it is an
    error. ``definitions`` is the walk's shared table, filled once the type's own
    walk is done; it is left out of comparisons, which name the type only.
    """

    name: str
    type_name: str
    definitions: dict[str, Node] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def target(self) -> Node:
        return self.definitions[self.name]


def resolve(node: Node) -> Node:
    """``node`` itself, or the definition a reference stands for (with its nullability)."""
    if isinstance(node, RefNode):
        target = node.target
        return replace(target, nullable=True) if node.nullable else target
    return node
