"""From a function's signature and docstring to its parameter list and schema tree."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, get_origin

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from .docstrings import parse_docstring
from .metadata import read_metadata
from .nodes import NO_DEFAULT, Node, ObjectNode, Property, ScalarNode
from .walk import TypeWalker, split_annotated, with_metadata

EMPTY: Any = inspect.Parameter.empty
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


@dataclass(frozen=True)
class ToolParameter:
    """One parameter a model can fill in."""

    name: str
    kind: inspect._ParameterKind
    annotation: Any
    node: Node
    default: Any = NO_DEFAULT
    default_factory: Callable[[], Any] | None = None
    # Constraints given through a pydantic Field default, for validation.
    validation_extras: tuple[Any, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT and self.default_factory is None

    def resolved_default(self) -> Any:
        return self.default_factory() if self.default_factory is not None else self.default


@dataclass(frozen=True)
class FunctionSpec:
    """What a tool's function looks like to a model."""

    name: str
    description: str
    parameters: tuple[ToolParameter, ...]
    accepts_extra_kwargs: bool
    # The first parameter when it is annotated RunContext[...]: filled by the
    # runner, never part of a schema.
    context_parameter: str | None = None

    def object_node(self) -> ObjectNode:
        # An unannotated parameter is a STRING whatever its default; claiming
        # that default in the schema would contradict the type.
        props = tuple(
            Property(
                name=p.name,
                node=p.node,
                required=p.required,
                default=NO_DEFAULT if p.annotation is EMPTY else p.default,
            )
            for p in self.parameters
        )
        return ObjectNode(properties=props)


def describe_function(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    localns: dict[str, Any] | None = None,
    skip_first: bool = False,
) -> FunctionSpec:
    """Inspect ``func``; raise ToolSchemaError naming it and the parameter at fault.

    ``localns`` resolves annotations naming types local to the function that
    defined the tool (pydantic does the same); ``skip_first`` leaves out a
    method's ``self`` or ``cls``.
    """
    owner = getattr(func, "__qualname__", None) or repr(func)
    walker = TypeWalker(owner, localns=localns)
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise walker.error("", f"has no inspectable signature: {exc}") from exc
    try:
        hints = typing.get_type_hints(_hint_source(func), localns=localns, include_extras=True)
    except Exception as exc:  # a bad forward reference can raise almost anything
        raise walker.error("", f"cannot resolve type hints: {exc}") from exc
    docs = parse_docstring(_docstring(func))
    summary = _summary(func) or docs.summary
    candidates = list(signature.parameters.values())
    if skip_first and candidates and candidates[0].kind not in _VARIADIC:
        candidates = candidates[1:]
    context_parameter = None
    if candidates and _is_run_context(hints.get(candidates[0].name)):
        context_parameter = candidates[0].name
        candidates = candidates[1:]
    params: list[ToolParameter] = []
    for param in candidates:
        if param.kind in _VARIADIC:
            continue
        params.append(_parameter(walker, param, hints.get(param.name, EMPTY), docs.params))
    return FunctionSpec(
        name=name if name is not None else _default_name(func),
        description=description if description is not None else summary,
        parameters=tuple(params),
        accepts_extra_kwargs=any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()
        ),
        context_parameter=context_parameter,
    )


def _is_run_context(annotation: Any) -> bool:
    from ..core.context import RunContext

    base = split_annotated(annotation)[0]
    return base is RunContext or get_origin(base) is RunContext


def _parameter(
    walker: TypeWalker, param: inspect.Parameter, annotation: Any, docs: dict[str, str]
) -> ToolParameter:
    default: Any = NO_DEFAULT if param.default is EMPTY else param.default
    factory: Callable[[], Any] | None = None
    field: FieldInfo | None = None
    if isinstance(default, FieldInfo):
        field = default
        default = NO_DEFAULT if field.default is PydanticUndefined else field.default
        factory = field.default_factory  # type: ignore[assignment]
    annotated = (None if annotation is EMPTY else
                 next((m for m in split_annotated(annotation)[1] if isinstance(m, FieldInfo)),
                      None))
    if field is None and default is NO_DEFAULT and annotated is not None:
        # Annotated[T, Field(default=...)] gives the default inside the annotation; its
        # description and constraints come with the annotation already.
        default = NO_DEFAULT if annotated.default is PydanticUndefined else annotated.default
        factory = annotated.default_factory  # type: ignore[assignment]
    if annotation is EMPTY:
        node: Node = ScalarNode(kind="string")
    else:
        node = walker.walk_parameter(annotation, param.name)
    # Precedence: a Field(description=...) inside Annotated is written on the type itself and
    # wins (pydantic-ai); otherwise the docstring's entry for the parameter wins over an
    # Annotated string or a Field default's description (the OpenAI Agents SDK), and those
    # over the docstring of the type itself.
    if field is not None:
        node = with_metadata(node, read_metadata([field]))
    if docs.get(param.name) and not (annotated is not None and annotated.description):
        node = replace(node, description=docs[param.name])
    return ToolParameter(
        name=param.name,
        kind=param.kind,
        annotation=annotation,
        node=node,
        default=default,
        default_factory=factory,
        validation_extras=tuple(field.metadata) if field is not None else (),
    )


def _default_name(func: Callable[..., Any]) -> str:
    # functools.partial has no __name__; the wrapped function's name is the useful one.
    inner = getattr(func, "func", func)
    return str(getattr(func, "__name__", None) or getattr(inner, "__name__", type(func).__name__))


def _summary(func: Callable[..., Any]) -> str:
    """A callable object's description: its class docstring's summary ("" for a function,
    or a class without a docstring of its own, whose ``__call__``'s summary is used)."""
    if _hint_source(func) is func or isinstance(func, functools.partial):
        return ""
    own = type(func).__dict__.get("__doc__")
    return parse_docstring(inspect.cleandoc(own)).summary if isinstance(own, str) else ""


def _docstring(func: Callable[..., Any]) -> str | None:
    """The docstring documenting ``func``'s parameters: ``__call__``'s own for a callable
    object (its parameters are ``__call__``'s), the class docstring as the fallback.
    """
    source = _hint_source(func)
    if source is not func and not isinstance(func, functools.partial):
        own = inspect.getdoc(source)
        if own:
            return own
    return inspect.getdoc(func)


def _hint_source(func: Callable[..., Any]) -> Any:
    """The object whose annotations describe ``func``'s parameters."""
    while isinstance(func, functools.partial):
        func = func.func
    if inspect.isroutine(func) or inspect.isclass(func):
        return func
    return type(func).__call__  # a callable instance
