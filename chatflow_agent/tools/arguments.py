"""Checking and converting the arguments of a tool call against the function's signature.

Validation is strict: the one conversion allowed is an integral float (``3.0``)
for an int parameter, because models write numbers that way. Arguments that
came from a model as plain JSON data are validated in pydantic's strict JSON
mode, where a list may fill a tuple or a dict a dataclass; Python objects are
validated in strict Python mode.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from ..errors import ToolArgumentsError, ToolSchemaError
from ..schema.nodes import (
    NO_DEFAULT,
    AnyNode,
    ArrayNode,
    EnumNode,
    MapNode,
    Node,
    ObjectNode,
    ScalarNode,
    UnionNode,
    resolve,
)
from ..schema.signature import EMPTY, FunctionSpec, ToolParameter
from ..schema.walk import gemini_enum_text
from .compat import pydantic_compatible


def _is_plain_json(value: object) -> bool:
    if value is None or isinstance(value, str | bool | int | float):
        return True
    if isinstance(value, list):
        return all(_is_plain_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain_json(v) for k, v in value.items())
    return False


def normalize(node: Node, value: Any, *, from_model: bool, gemini: bool) -> Any:
    """Undo what a dialect did to a value, guided by the schema tree.

    Integral floats become ints for integer nodes. For model input only: Gemini's
    stringified enum values get their type back, and a null sent for an object
    property that has a default and is not nullable is dropped, so the default
    applies (OpenAI strict mode makes models send null for "left out").
    """
    if value is None:
        return value
    node = resolve(node)  # a recursive type's reference stands for its definition
    if isinstance(node, ScalarNode):
        if node.kind == "integer" and isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    if isinstance(node, EnumNode):
        if gemini and from_model and isinstance(value, str):
            for option in node.values:
                if not isinstance(option, str) and gemini_enum_text(option) == value:
                    return option
        return value
    if isinstance(node, ArrayNode) and isinstance(value, list):
        return [normalize(node.items, v, from_model=from_model, gemini=gemini) for v in value]
    if isinstance(node, MapNode):
        return _normalize_map(node, value, from_model=from_model, gemini=gemini)
    if isinstance(node, ObjectNode) and isinstance(value, dict):
        return _normalize_object(node, value, from_model=from_model, gemini=gemini)
    if isinstance(node, UnionNode):
        return _normalize_union(node, value, from_model=from_model, gemini=gemini)
    return value


def _normalize_object(
    node: ObjectNode, value: dict[str, Any], *, from_model: bool, gemini: bool
) -> dict[str, Any]:
    props = {prop.name: prop for prop in node.properties}
    result: dict[str, Any] = {}
    for key, item in value.items():
        prop = props.get(key)
        if prop is None:
            result[key] = item
        elif item is None and from_model and not prop.required and not prop.node.nullable:
            continue
        else:
            result[key] = normalize(prop.node, item, from_model=from_model, gemini=gemini)
    return result


def _normalize_union(node: UnionNode, value: Any, *, from_model: bool, gemini: bool) -> Any:
    kinds = [o.kind for o in node.options if isinstance(o, ScalarNode)]
    if isinstance(value, float) and value.is_integer() and "integer" in kinds:
        return value if "number" in kinds else int(value)
    for option in node.options:
        if _fits_container(option, value, gemini=gemini and from_model) or (
            isinstance(option, EnumNode) and isinstance(value, str)
        ):
            return normalize(option, value, from_model=from_model, gemini=gemini)
    return value


def _normalize_map(node: MapNode, value: Any, *, from_model: bool, gemini: bool) -> Any:
    if gemini and from_model and isinstance(value, list):
        return _map_from_entries(node, value)
    if isinstance(value, dict):
        return {
            k: normalize(node.values, v, from_model=from_model, gemini=gemini)
            for k, v in value.items()
        }
    return value


def _map_from_entries(node: MapNode, entries: list[Any]) -> Any:
    # Gemini sends a dict[str, T] as [{"key": k, "value": v}, ...] (see render_gemini).
    if not all(isinstance(e, dict) and set(e) == {"key", "value"} for e in entries):
        return entries  # not entries after all; validation will say what is wrong
    return {e["key"]: normalize(node.values, e["value"], from_model=True, gemini=True) for e in entries}


def _fits_container(node: Node, value: Any, *, gemini: bool = False) -> bool:
    node = resolve(node)
    if isinstance(value, list):
        return isinstance(node, ArrayNode) or (gemini and isinstance(node, MapNode))
    return isinstance(value, dict) and isinstance(node, ObjectNode | MapNode)


class ArgumentBinder:
    """Turns keyword arguments into a validated call of one function."""

    def __init__(self, spec: FunctionSpec, owner: str, *, localns: dict[str, Any] | None = None) -> None:
        self._spec = spec
        self._owner = owner
        self._params = {p.name: p for p in spec.parameters}
        self._adapters: dict[str, TypeAdapter[Any]] = {}
        for param in spec.parameters:
            if param.annotation is EMPTY:
                # Advertised as a string, so a model's argument is checked as one; the
                # default (any value, since nothing says its type) is left alone.
                self._adapters[param.name] = TypeAdapter(str)
                continue
            if isinstance(param.node, AnyNode):
                continue
            try:
                annotation = pydantic_compatible(param.annotation, localns=localns)
                if param.validation_extras:
                    annotation = Annotated[(annotation, *param.validation_extras)]
                adapter: TypeAdapter[Any] = TypeAdapter(annotation)
                if not adapter.pydantic_complete:
                    # Forward references to types local to the defining function.
                    adapter.rebuild(_types_namespace=localns or {})
            except Exception as exc:  # pydantic raises several types for types it cannot build
                raise ToolSchemaError(
                    f"tool function {owner!r}, parameter {param.name!r}: "
                    f"cannot validate {param.annotation!r}: {exc}",
                    function=owner,
                    path=param.name,
                ) from exc
            self._adapters[param.name] = adapter
            self._check_default(param, adapter)

    def _check_default(self, param: ToolParameter, adapter: TypeAdapter[Any]) -> None:
        if param.default is NO_DEFAULT:
            return
        try:
            adapter.validate_python(param.default, strict=True)
        except ValidationError as exc:
            raise ToolSchemaError(
                f"tool function {self._owner!r}, parameter {param.name!r}: default "
                f"{param.default!r} does not fit {param.annotation!r}"
                + (" (annotate it as `T | None`)" if param.default is None else ""),
                function=self._owner,
                path=param.name,
            ) from exc

    def from_model(self, arguments: Mapping[str, Any], *, gemini: bool) -> dict[str, Any]:
        """Undo dialect artefacts in a model's arguments; see ``normalize``."""
        result: dict[str, Any] = {}
        for key, value in arguments.items():
            param = self._params.get(key)
            if param is None:
                result[key] = value
            elif value is None and not param.required and not param.node.nullable:
                continue
            else:
                result[key] = normalize(param.node, value, from_model=True, gemini=gemini)
        return result

    def bind(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Validate ``arguments``; return positional and keyword arguments for the call."""
        unknown = [k for k in arguments if k not in self._params]
        if unknown and not self._spec.accepts_extra_kwargs:
            raise self._error(f"unexpected argument(s): {', '.join(sorted(unknown))}")
        positional: list[Any] = []
        keywords: dict[str, Any] = {k: arguments[k] for k in unknown}
        for param in self._spec.parameters:
            if param.name in arguments:
                value = self._validate(param, arguments[param.name])
            elif param.required:
                raise self._error(f"missing required argument {param.name!r}")
            else:
                value = param.resolved_default()
            if param.kind is inspect.Parameter.POSITIONAL_ONLY:
                positional.append(value)
            else:
                keywords[param.name] = value
        return positional, keywords

    def _validate(self, param: ToolParameter, value: Any) -> Any:
        adapter = self._adapters.get(param.name)
        if adapter is None:
            return value
        value = normalize(param.node, value, from_model=False, gemini=False)
        try:
            if _is_plain_json(value):
                return adapter.validate_json(json.dumps(value), strict=True)
            return adapter.validate_python(value, strict=True)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in (param.name, *err['loc']))}: {err['msg']}"
                for err in exc.errors(include_url=False)
            )
            raise self._error(f"invalid arguments: {problems}") from exc
        except ValueError as exc:  # json.dumps rejects NaN only with allow_nan=False
            raise self._error(f"invalid argument {param.name!r}: {exc}") from exc

    def _error(self, message: str) -> ToolArgumentsError:
        return ToolArgumentsError(f"tool {self._spec.name!r}: {message}", tool_name=self._spec.name)
