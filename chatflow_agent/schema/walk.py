"""The one type walk: Python annotations to the provider-neutral schema tree.

Every dialect renders the tree this module builds, so a rule lives here once.
Checks that only Gemini needs (enum values that stay distinct as strings) also
live here: Gemini's declaration is the canonical one, so a tool that Gemini
cannot express is rejected when it is defined. Recursion is the exception: a
type that refers to itself becomes a ``RefNode``, which JSON Schema (OpenAI,
Anthropic) says with ``$defs``/``$ref`` and only the Gemini dialect refuses.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import types
import typing
import uuid
from collections import abc
from dataclasses import replace
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import typing_extensions
from pydantic import AliasChoices, BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ..errors import ToolSchemaError
from .attribute_docs import attribute_docstrings
from .metadata import Metadata, read_metadata
from .nodes import (
    NO_DEFAULT,
    AnyNode,
    ArrayNode,
    Constraints,
    EnumNode,
    EnumValue,
    MapNode,
    Node,
    ObjectNode,
    Property,
    RefNode,
    ScalarKind,
    ScalarNode,
    UnionNode,
)

_SCALARS: dict[object, tuple[ScalarKind, str | None]] = {
    str: ("string", None),
    bool: ("boolean", None),
    int: ("integer", None),
    float: ("number", None),
    datetime.datetime: ("string", "date-time"),
    datetime.date: ("string", "date"),
    datetime.time: ("string", "time"),
    uuid.UUID: ("string", "uuid"),
}
_UNIQUE_ORIGINS: frozenset[object] = frozenset({set, frozenset, abc.Set, abc.MutableSet})
_ARRAY_ORIGINS: frozenset[object] = _UNIQUE_ORIGINS | {list, abc.Sequence, abc.MutableSequence}
_MAP_ORIGINS: frozenset[object] = frozenset({dict, abc.Mapping, abc.MutableMapping})
_UNION_ORIGINS: frozenset[object] = frozenset({Union, types.UnionType})
_KEY_WRAPPERS: frozenset[object] = frozenset(
    {
        typing.Required,
        typing.NotRequired,
        typing_extensions.Required,
        typing_extensions.NotRequired,
        typing_extensions.ReadOnly,
    }
)
_NONE_TYPES: tuple[object, ...] = (None, type(None))
# ``Self`` inside a model, dataclass or TypedDict names that class (pydantic reads it so).
_SELF: tuple[object, ...] = (typing.Self, typing_extensions.Self)


def gemini_enum_text(value: EnumValue) -> str:
    """Spell an enum value the way Gemini sees it: Gemini enums are strings."""
    if isinstance(value, str):
        return value
    return "true" if value is True else "false" if value is False else repr(value)


def split_annotated(annotation: object) -> tuple[object, list[object]]:
    """Strip ``Annotated`` and TypedDict key wrappers, collecting the extras."""
    extras: list[object] = []
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            extras.extend(annotation.__metadata__)  # type: ignore[attr-defined]
            annotation = annotation.__origin__  # type: ignore[attr-defined]
        elif origin in _KEY_WRAPPERS:
            annotation = get_args(annotation)[0]
        else:
            return annotation, extras


def with_metadata(node: Node, meta: Metadata) -> Node:
    return replace(
        node,
        description=meta.description or node.description,
        constraints=node.constraints.merged(meta.constraints),
    )


class TypeWalker:
    """Walks the annotations of one function; errors name it and the parameter path."""

    def __init__(self, owner: str, *, localns: dict[str, Any] | None = None) -> None:
        self.owner = owner
        self.localns = localns
        self._stack: list[type] = []
        # Types met again inside their own walk, and the $defs their RefNodes point to.
        self._recursive: set[type] = set()
        self._names: dict[type, str] = {}
        self.definitions: dict[str, Node] = {}

    def error(self, path: str, message: str) -> ToolSchemaError:
        where = f", parameter {path!r}" if path else ""
        return ToolSchemaError(
            f"tool function {self.owner!r}{where}: {message}", function=self.owner, path=path
        )

    def walk(self, annotation: object, path: str) -> Node:
        base, extras = split_annotated(annotation)
        node = self._walk_base(base, path)
        return with_metadata(node, read_metadata(extras)) if extras else node

    def walk_parameter(self, annotation: object, path: str) -> Node:
        """Walk a parameter's annotation; a bare ``Any`` is refused there.

        Gemini's schema has no "any value" (every schema needs a type), so a
        parameter of any type cannot be declared; inside a bare ``list`` or
        ``dict`` it stays allowed, as those name the container at least.
        """
        if split_annotated(annotation)[0] is Any:
            raise self.error(
                path,
                "Any cannot be declared to Gemini; annotate a concrete type "
                "(str for free text, dict for a JSON object)",
            )
        return self.walk(annotation, path)

    def _walk_base(self, tp: Any, path: str) -> Node:
        if tp is object:
            raise self.error(
                path, "object says nothing a model can fill in; annotate a concrete type"
            )
        if tp is Any:
            return AnyNode()
        if tp in _NONE_TYPES:
            raise self.error(path, "None on its own is not a type a model can send")
        if any(tp is self_type for self_type in _SELF):
            if not self._stack:
                raise self.error(path, "Self names no class here: use it inside a model, "
                                       "dataclass or TypedDict")
            return self._class(self._stack[-1], path)  # a reference: the class is being walked
        if isinstance(tp, typing.NewType):
            return self.walk(tp.__supertype__, path)
        origin = get_origin(tp)
        if origin is Literal:
            return self._literal(tp, path)
        if origin in _UNION_ORIGINS:
            return self._union(get_args(tp), path)
        if origin is not None:
            return self._generic(tp, origin, get_args(tp), path)
        if isinstance(tp, type):
            return self._class(tp, path)
        raise self.error(path, f"unsupported type {tp!r}")

    def _class(self, cls: type, path: str) -> Node:
        if cls in _SCALARS:
            kind, fmt = _SCALARS[cls]
            return ScalarNode(kind=kind, format=fmt)
        if issubclass(cls, enum.Enum):
            values = tuple(member.value for member in cls)
            return EnumNode(values=self._enum_values(values, path))
        if cls in (list, set, frozenset, tuple):
            return ArrayNode(items=AnyNode(), unique=cls in _UNIQUE_ORIGINS)
        if cls is dict:
            return MapNode(values=AnyNode())
        if typing_extensions.is_typeddict(cls):
            return self._typed_dict(cls, path)
        if dataclasses.is_dataclass(cls):
            return self._dataclass(cls, path)
        if issubclass(cls, BaseModel):
            return self._model(cls, path)
        raise self.error(path, f"unsupported type {cls.__qualname__!r}")

    def _generic(self, tp: Any, origin: Any, args: tuple[Any, ...], path: str) -> Node:
        if origin is tuple:
            return self._tuple(args, path)
        if origin in _ARRAY_ORIGINS:
            items = self.walk(args[0], f"{path}[]") if args else AnyNode()
            return ArrayNode(items=items, unique=origin in _UNIQUE_ORIGINS)
        if origin in _MAP_ORIGINS:
            key = split_annotated(args[0])[0] if args else str
            if key is not str:
                raise self.error(path, f"dict keys must be str, not {key!r}")
            return MapNode(values=self.walk(args[1], f"{path}.*") if args else AnyNode())
        raise self.error(path, f"unsupported type {tp!r}")

    def _tuple(self, args: tuple[Any, ...], path: str) -> Node:
        if len(args) == 2 and args[1] is Ellipsis:
            return ArrayNode(items=self.walk(args[0], f"{path}[]"))
        if not args or args == ((),):
            raise self.error(path, "an empty tuple carries no value")
        # A fixed tuple is sent as an array of exactly len(args) items; pydantic
        # checks each position, which no provider's schema can say for all three.
        options: list[Node] = []
        for index, arg in enumerate(args):
            item = self.walk(arg, f"{path}[{index}]")
            if item not in options:
                options.append(item)
        items = options[0] if len(options) == 1 else UnionNode(options=tuple(options))
        size = Constraints(min_length=len(args), max_length=len(args))
        return ArrayNode(items=items, constraints=size)

    def _literal(self, tp: Any, path: str) -> Node:
        args = get_args(tp)
        values = tuple(value for value in args if value is not None)
        if not values:
            raise self.error(path, "Literal[None] carries no value")
        for value in values:
            if isinstance(value, enum.Enum) or not isinstance(value, str | int | float | bool):
                raise self.error(path, f"Literal value {value!r} is not a str, int, float or bool")
        return EnumNode(values=self._enum_values(values, path), nullable=None in args)

    def _enum_values(self, values: tuple[Any, ...], path: str) -> tuple[EnumValue, ...]:
        seen: dict[str, object] = {}
        for value in values:
            if not isinstance(value, str | int | float | bool):
                raise self.error(path, f"enum value {value!r} is not a str, int, float or bool")
            text = gemini_enum_text(value)
            if text in seen and seen[text] is not value:
                raise self.error(
                    path, f"enum values {seen[text]!r} and {value!r} look the same to Gemini"
                )
            seen[text] = value
        return tuple(values)

    def _union(self, members: tuple[Any, ...], path: str) -> Node:
        nullable = any(member in _NONE_TYPES for member in members)
        others = [member for member in members if member not in _NONE_TYPES]
        if int in others and float in others:
            # int | float is one NUMBER whichever comes first; keep the first's place.
            first = min(others.index(int), others.index(float))
            others = [m for i, m in enumerate(others) if m not in (int, float) or i == first]
            others[first] = float
        nodes: list[Node] = []
        for member in others:
            node = self.walk(member, path)
            if node not in nodes:
                nodes.append(node)
        if len(nodes) == 1:
            return replace(nodes[0], nullable=nullable or nodes[0].nullable)
        return UnionNode(options=tuple(nodes), nullable=nullable)

    def _enter(self, cls: type) -> RefNode | None:
        """Start walking ``cls``; a reference instead when ``cls`` is already being walked."""
        if cls in self._stack:
            self._recursive.add(cls)
            return self._reference(cls)
        self._stack.append(cls)
        return None

    def _leave(self, cls: type, node: Node) -> Node:
        """Finish ``cls``: a recursive type is defined once and referred to everywhere."""
        self._stack.pop()
        if cls not in self._recursive:
            return node
        reference = self._reference(cls)
        self.definitions[reference.name] = node
        return reference

    def _reference(self, cls: type) -> RefNode:
        name = self._names.get(cls)
        if name is None:
            # Two types of one name (from two modules) must not share a definition.
            taken = set(self._names.values())
            name = cls.__name__
            if name in taken:
                name = f"{cls.__module__}.{cls.__qualname__}".replace(".", "_").replace("<", "")
                name = name.replace(">", "")
            self._names[cls] = name
        return RefNode(name=name, type_name=cls.__qualname__, definitions=self.definitions)

    def _hints(self, owner: object, path: str) -> dict[str, Any]:
        try:
            return typing.get_type_hints(owner, localns=self.localns, include_extras=True)
        except Exception as exc:  # a bad forward reference can raise almost anything
            raise self.error(path, f"cannot resolve type hints: {exc}") from exc

    def _typed_dict(self, cls: type, path: str) -> Node:
        if (reference := self._enter(cls)) is not None:
            return reference
        hints = self._hints(cls, path)
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset(hints))
        docs = attribute_docstrings(cls)
        props = tuple(
            Property(
                name=key,
                node=_described(self.walk(hint, _join(path, key)), docs.get(key)),
                required=_key_required(hint, key in required_keys),
            )
            for key, hint in hints.items()
        )
        return self._leave(cls, ObjectNode(properties=props, description=_class_doc(cls)))

    def _dataclass(self, cls: type, path: str) -> Node:
        if (reference := self._enter(cls)) is not None:
            return reference
        hints = self._hints(cls, path)
        props: list[Property] = []
        for field in dataclasses.fields(cls):
            if not field.init:
                continue
            has_factory = field.default_factory is not dataclasses.MISSING
            default = NO_DEFAULT if field.default is dataclasses.MISSING else field.default
            node = self.walk(hints.get(field.name, Any), _join(path, field.name))
            description = field.metadata.get("description")
            if isinstance(description, str):
                node = replace(node, description=description)
            required = default is NO_DEFAULT and not has_factory
            props.append(Property(name=field.name, node=node, required=required, default=default))
        return self._leave(cls, ObjectNode(properties=tuple(props), description=_class_doc(cls)))

    def _model(self, cls: type[BaseModel], path: str) -> Node:
        if (reference := self._enter(cls)) is not None:
            return reference
        props: list[Property] = []
        for name, info in cls.model_fields.items():
            key = _accepted_name(cls, name, info)
            node = self.walk(info.annotation, _join(path, key))
            node = with_metadata(node, read_metadata([info]))
            default = NO_DEFAULT if info.default is PydanticUndefined else info.default
            props.append(
                Property(name=key, node=node, required=info.is_required(), default=default)
            )
        return self._leave(cls, ObjectNode(properties=tuple(props), description=_class_doc(cls)))


def _accepted_name(cls: type[BaseModel], name: str, info: FieldInfo) -> str:
    """The key validation accepts for a field, so the schema advertises that one."""
    if cls.model_config.get("validate_by_alias") is False:
        return name
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        alias = next((choice for choice in alias.choices if isinstance(choice, str)), None)
    if isinstance(alias, str):
        return alias
    return info.alias or name


def _described(node: Node, doc: str | None) -> Node:
    # An attribute docstring describes a key that says nothing else about itself.
    return replace(node, description=doc) if doc and not node.description else node


def _key_required(hint: object, declared: bool) -> bool:
    """Whether a TypedDict key is required, trusting an explicit (Not)Required in its hint.

    Python 3.11 computes ``__required_keys__`` before string annotations (``from
    __future__ import annotations``) are resolved, so ``NotRequired[int]`` counts
    as required there, while pydantic's validator reads the resolved hint.
    """
    while True:
        origin = get_origin(hint)
        if origin in (typing.NotRequired, typing_extensions.NotRequired):
            return False
        if origin in (typing.Required, typing_extensions.Required):
            return True
        if origin is Annotated or origin is typing_extensions.ReadOnly:
            hint = get_args(hint)[0]
        else:
            return declared


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _class_doc(cls: type) -> str | None:
    doc = cls.__dict__.get("__doc__")
    # dataclasses invent a docstring from the signature; it tells a model nothing.
    if not isinstance(doc, str) or doc.startswith(f"{cls.__name__}("):
        return None
    return inspect.cleandoc(doc) or None
