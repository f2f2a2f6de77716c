"""Making annotations that pydantic cannot validate on Python 3.11 validatable."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Union, get_args, get_origin

import typing_extensions

from ..schema.walk import split_annotated


def pydantic_compatible(annotation: Any, *, localns: dict[str, Any] | None = None) -> Any:
    """Return ``annotation`` with every ``typing.TypedDict`` swapped for an equivalent.

    pydantic refuses ``typing.TypedDict`` before Python 3.12, yet it is what most
    tool authors write; the ``typing_extensions`` twin validates the same way.
    """
    if _is_typing_typeddict(annotation):
        return _rebuild_typeddict(annotation, localns)
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is None or not args:
        return annotation
    if origin is Annotated:
        base = pydantic_compatible(annotation.__origin__, localns=localns)
        if base is annotation.__origin__:
            return annotation
        return Annotated[(base, *annotation.__metadata__)]
    if origin is typing.Literal:
        return annotation
    new_args = tuple(pydantic_compatible(arg, localns=localns) for arg in args)
    if all(new is old for new, old in zip(new_args, args, strict=True)):
        return annotation
    if origin in (Union, types.UnionType):
        return Union[new_args]  # noqa: UP007 - Union[...] takes a runtime tuple
    return origin[new_args]


def _is_typing_typeddict(annotation: Any) -> bool:
    return (
        isinstance(annotation, type)
        and typing.is_typeddict(annotation)
        and type(annotation).__module__ == "typing"
    )


def _rebuild_typeddict(cls: type, localns: dict[str, Any] | None) -> Any:
    hints = typing.get_type_hints(cls, localns=localns, include_extras=True)
    required: frozenset[str] = getattr(cls, "__required_keys__", frozenset(hints))
    fields: dict[str, Any] = {}
    for key, hint in hints.items():
        base, extras = split_annotated(hint)
        value = pydantic_compatible(base, localns=localns)
        if extras:
            value = Annotated[(value, *extras)]
        wrapper = typing_extensions.Required if key in required else typing_extensions.NotRequired
        fields[key] = wrapper[value]
    return typing_extensions.TypedDict(cls.__name__, fields)  # type: ignore[operator]
