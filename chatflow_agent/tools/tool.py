"""``Tool`` and the ``@tool`` decorator."""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import sys
import types
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Generic, Literal, ParamSpec, TypeVar, overload

from ..core.context import current_run_context
from ..core.durations import check_seconds
from ..errors import ToolExecutionError, ToolSchemaError
from ..schema import JsonSchemaRenderer, describe_function, render_gemini
from ..schema.declarations import ProviderDeclarations
from ..schema.dialects import Schema
from ..schema.limits import check_tool_name
from ..schema.walk import TypeWalker
from .arguments import ArgumentBinder
from .execution import run_in_tool_thread, run_sync

P = ParamSpec("P")
R = TypeVar("R")
MethodKind = Literal["function", "method", "classmethod", "staticmethod"]

_IN_LOOP_HINT = (
    " (execute() ran this async tool on its own event loop in a side thread, because this "
    "thread's loop is running and blocked meanwhile; it cannot await objects of that loop: "
    "use `await tool.execute_async(...)` there)"
)
_warned_in_loop = False


class Tool(ProviderDeclarations, Generic[P, R]):
    """A function a model can call, with its schema in every provider's dialect.

    The schema is built and checked when the tool is defined, so a signature no
    provider accepts fails at import time, not in the middle of a conversation.
    Calling the tool calls the function, unchanged.

    On a method, ``Tool`` is a descriptor like a function: ``obj.method`` is a
    tool bound to ``obj`` whose schema leaves out ``self``; ``@tool`` over
    ``@classmethod`` binds the class, over ``@staticmethod`` binds nothing.
    A first parameter annotated ``RunContext[Deps]`` is filled by the Runner.
    ``timeout`` (seconds) bounds each call the Runner makes.
    """

    def __init__(
        self,
        func: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        localns: dict[str, Any] | None = None,
    ) -> None:
        if timeout is not None:
            timeout = check_seconds(timeout, "timeout")
        kind: MethodKind = "function"
        inner: Any = func
        if isinstance(func, classmethod | staticmethod):
            kind = "classmethod" if isinstance(func, classmethod) else "staticmethod"
            inner = func.__func__
        elif _first_parameter(func) == "cls" and _in_class_body(func):
            kind = "classmethod"  # @classmethod above @tool: the class comes through __get__
        functools.update_wrapper(self, inner)
        self.func: Callable[..., Any] = inner
        self._call: Callable[..., Any] = inner
        self._kind: MethodKind = kind
        self._bound = kind != "classmethod"
        self._overrides = (name, description)
        self._localns = localns if localns is not None else _caller_locals(2)
        self.timeout = timeout
        self.is_async = inspect.iscoroutinefunction(inner)
        # A method's schema is built here, before __set_name__ says it is one: leave
        # ``self`` out now, or a RunContext after it is walked as a parameter.
        method_like = kind == "function" and _first_parameter(func) == "self" and _in_class_body(func)
        self._describe(skip_first=kind == "classmethod" or method_like)

    def _describe(self, *, skip_first: bool) -> None:
        name, description = self._overrides
        spec = describe_function(
            self.func, name=name, description=description, localns=self._localns,
            skip_first=skip_first,
        )  # fmt: skip
        owner = getattr(self.func, "__qualname__", spec.name)
        check_tool_name(spec.name, owner=owner)
        self.name: str = spec.name
        self.description: str = spec.description
        self.spec = spec
        self._binder = ArgumentBinder(spec, owner, localns=self._localns)
        self._walker = TypeWalker(owner)
        # A recursive type is refused only when Gemini's declaration is asked for:
        # OpenAI and Anthropic take it as $defs/$ref.
        self._gemini_parameters: Schema | None = None
        self._gemini_refusal: ToolSchemaError | None = None
        try:
            self._gemini_parameters = render_gemini(spec.object_node(), self._walker.error)
        except ToolSchemaError as exc:
            self._gemini_refusal = exc
        self._json_parameters = self._render_json(strict=False)
        self._context_positional = False
        if spec.context_parameter is not None:
            parameter = inspect.signature(self.func).parameters[spec.context_parameter]
            self._context_positional = parameter.kind is inspect.Parameter.POSITIONAL_ONLY

    # ---------------------------------------------------------------- methods

    def __set_name__(self, owner: type, attribute: str) -> None:
        # Only a function defined in this class body is a method; a tool merely
        # stored as a class attribute stays the function it was.
        defined_here = getattr(self.func, "__qualname__", "") == f"{owner.__qualname__}.{attribute}"
        if self._kind == "function" and defined_here:
            self._kind = "method"
            self._bound = False
            self._describe(skip_first=True)

    def __get__(self, instance: object, owner: type | None = None) -> Tool[P, R]:
        if self._kind == "classmethod":
            # classmethod(tool) hands the class over as the instance (Python 3.11, 3.12).
            chained = isinstance(instance, type) and owner is type(instance)
            target = instance if chained else owner if owner is not None else type(instance)
            return self._bind_to(types.MethodType(self.func, target))
        if self._kind == "method" and instance is not None:
            return self._bind_to(types.MethodType(self.func, instance))
        return self

    def _bind_to(self, call: Callable[..., Any]) -> Tool[P, R]:
        bound = copy.copy(self)
        bound._call = call
        bound._bound = True
        return bound

    @property
    def is_unbound_method(self) -> bool:
        """True for a method's tool read from the class: it has no instance to run on."""
        return not self._bound

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self._call(*args, **kwargs)
        return result

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, func={getattr(self.func, '__qualname__', self.func)!r})"

    # ------------------------------------------------------------------ schemas

    def _render_json(self, *, strict: bool) -> Schema:
        renderer = JsonSchemaRenderer(strict=strict, error=self._walker.error)
        return renderer.render(self.spec.object_node())

    def to_gemini_declaration(self) -> dict[str, Any]:
        """The Gemini ``FunctionDeclaration``: OpenAPI subset, UPPERCASE types, ``nullable``."""
        declaration: dict[str, Any] = {"name": self.name}
        if self.description:
            declaration["description"] = self.description
        if self._gemini_refusal is not None:
            refusal = self._gemini_refusal
            raise ToolSchemaError(str(refusal), function=refusal.function, path=refusal.path)
        # Gemini rejects an OBJECT with no properties, and a no-argument tool needs none.
        if self.spec.parameters and self._gemini_parameters is not None:
            declaration["parameters"] = _copy(self._gemini_parameters)
        return declaration

    def to_openai_parameters(self, *, strict: bool = False) -> dict[str, Any]:
        """JSON Schema for OpenAI's ``parameters`` and Anthropic's ``input_schema``.

        With ``strict=True`` the schema follows OpenAI's strict mode; it raises
        ToolSchemaError if the signature uses something strict mode cannot say.
        """
        return self._render_json(strict=True) if strict else _copy(self._json_parameters)

    # ---------------------------------------------------------------- execution

    def bind_model_arguments(self, arguments: Mapping[str, Any], *, gemini: bool) -> dict[str, Any]:
        """Undo what a provider's dialect did to arguments a model sent."""
        return self._binder.from_model(arguments, gemini=gemini)

    def _prepare(self, kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        if not self._bound:
            raise ToolExecutionError(
                f"tool {self.name!r} is a method: use it from an instance (obj.{self.name})",
                tool_name=self.name,
            )
        context_name = self.spec.context_parameter
        context = kwargs.pop(context_name, None) if context_name else None
        args, call_kwargs = self._binder.bind(kwargs)
        if context_name is None:
            return args, call_kwargs
        context = context if context is not None else current_run_context.get()
        if context is None:
            raise ToolExecutionError(
                f"tool {self.name!r} takes a RunContext: run it through a Runner, "
                f"or pass {context_name}=RunContext(deps)",
                tool_name=self.name,
            )
        if self._context_positional:
            return [context, *args], call_kwargs
        return args, {context_name: context, **call_kwargs}

    async def execute_async(self, **kwargs: Any) -> Any:
        """Validate the arguments and run the tool without blocking the event loop.

        Async tools are awaited here; sync ones run on the bounded tool thread pool.
        """
        args, call_kwargs = self._prepare(kwargs)
        try:
            if self.is_async:
                return await self._call(*args, **call_kwargs)
            result = await run_in_tool_thread(self._call, *args, **call_kwargs)
            if inspect.isawaitable(result):
                return await result
            return result
        except Exception as exc:
            raise self._failure(exc) from exc

    def execute(self, **kwargs: Any) -> Any:
        """Validate the arguments and run the tool, blocking until it is done.

        A sync tool runs right here. An async one runs with ``asyncio.run``.
        Called from a thread whose event loop is running (a notebook cell, a sync
        helper inside an async app), an async tool runs on its own loop in a side
        thread while the caller's loop stays blocked for the whole call; it
        cannot await objects owned by the caller's loop. A ``RuntimeWarning``
        says so once: use ``await tool.execute_async(...)`` there instead.
        """
        if self.is_async:
            if not _loop_running():
                return run_sync(self.execute_async(**kwargs))
            _warn_in_loop()
            try:
                return run_sync(self.execute_async(**kwargs))
            except ToolExecutionError as exc:
                if isinstance(exc.__cause__, Exception):
                    raise ToolExecutionError(str(exc) + _IN_LOOP_HINT, tool_name=self.name) from (
                        exc.__cause__
                    )
                raise
        if _loop_running():
            _warn_in_loop()  # a sync tool blocks the running loop just as an async one does
        args, call_kwargs = self._prepare(kwargs)
        try:
            return self._call(*args, **call_kwargs)
        except Exception as exc:
            raise self._failure(exc) from exc

    def _failure(self, exc: Exception) -> ToolExecutionError:
        detail = str(exc).strip()
        kind = type(exc).__name__
        message = f"tool {self.name!r} raised {kind}" + (f": {detail}" if detail else "")
        return ToolExecutionError(message, tool_name=self.name)


def _first_parameter(func: Callable[..., Any]) -> str | None:
    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    return parameters[0].name if parameters else None


def _in_class_body(func: Callable[..., Any]) -> bool:
    parts = str(getattr(func, "__qualname__", "")).split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _warn_in_loop() -> None:
    global _warned_in_loop
    if _warned_in_loop:
        return
    _warned_in_loop = True
    warnings.warn(
        "Tool.execute() was called inside a running event loop: the loop is blocked until "
        "the tool finishes; use `await tool.execute_async(...)` instead",
        RuntimeWarning,
        stacklevel=3,
    )


_FRAMES_SEARCHED = 8


def _caller_locals(depth: int) -> dict[str, Any] | None:
    """The local names of the callers from ``depth`` levels up, to resolve annotations with.

    Not only the immediate caller: ``[tool(f) for f in funcs]`` runs in the
    comprehension's own frame on 3.11, and a helper calling ``tool(fn)`` is not
    where ``fn``'s types live. Frames are read outwards up to module level (the
    function's own globals cover that), nearer names winning, at most
    ``_FRAMES_SEARCHED`` of them.
    """
    try:
        frame: types.FrameType | None = sys._getframe(depth)
    except ValueError:
        return None
    chain: list[dict[str, Any]] = []
    while frame is not None and len(chain) < _FRAMES_SEARCHED:
        if frame.f_locals is frame.f_globals:
            break  # module level: the function's own globals already have these
        chain.append(frame.f_locals)
        frame = frame.f_back
    if not chain:
        return None
    merged: dict[str, Any] = {}
    for names in reversed(chain):
        merged.update(names)
    return merged


def _copy(schema: dict[str, Any]) -> dict[str, Any]:
    # Callers may edit what they get; the cached schema must survive that.
    return copy.deepcopy(schema)


@overload
def tool(func: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, timeout: float | None = None
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    func: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Make a function a Tool; use bare (``@tool``) or with ``name=``, ``description=``,
    ``timeout=`` (seconds a call by the Runner may take)."""
    if func is not None:
        return Tool(func, name=name, description=description, timeout=timeout, localns=_caller_locals(2))

    def decorate(inner: Callable[P, R]) -> Tool[P, R]:
        return Tool(
            inner, name=name, description=description, timeout=timeout,
            localns=_caller_locals(2),
        )  # fmt: skip

    return decorate
