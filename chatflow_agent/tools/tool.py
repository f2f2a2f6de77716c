"""``Tool`` and the ``@tool`` decorator."""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Generic, ParamSpec, TypeVar, overload

from ..errors import ToolExecutionError
from ..schema import JsonSchemaRenderer, describe_function, render_gemini
from ..schema.declarations import ProviderDeclarations
from ..schema.dialects import Schema
from ..schema.limits import check_tool_name
from ..schema.walk import TypeWalker
from .arguments import ArgumentBinder
from .execution import run_in_tool_thread, run_sync

P = ParamSpec("P")
R = TypeVar("R")


class Tool(ProviderDeclarations, Generic[P, R]):
    """A function a model can call, with its schema in every provider's dialect.

    The schema is built and checked when the tool is defined, so a signature no
    provider accepts fails at import time, not in the middle of a conversation.
    Calling the tool calls the function, unchanged.
    """

    def __init__(
        self,
        func: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        functools.update_wrapper(self, func)
        self.func = func
        self._call: Callable[..., Any] = func
        spec = describe_function(func, name=name, description=description)
        owner = getattr(func, "__qualname__", spec.name)
        check_tool_name(spec.name, owner=owner)
        self.name: str = spec.name
        self.description: str = spec.description
        self.spec = spec
        self.is_async = inspect.iscoroutinefunction(func)
        self._binder = ArgumentBinder(spec, owner)
        self._walker = TypeWalker(owner)
        self._gemini_parameters = render_gemini(spec.object_node())
        self._json_parameters = self._render_json(strict=False)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.func(*args, **kwargs)

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
        # Gemini rejects an OBJECT with no properties, and a no-argument tool needs none.
        if self.spec.parameters:
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

    async def execute_async(self, **kwargs: Any) -> Any:
        """Validate the arguments and run the tool without blocking the event loop.

        Async tools are awaited here; sync ones run on the bounded tool thread pool.
        """
        args, call_kwargs = self._binder.bind(kwargs)
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

        A sync tool runs right here. An async one runs with ``asyncio.run``, or on
        a side thread when this thread already runs an event loop.
        """
        if self.is_async:
            return run_sync(self.execute_async(**kwargs))
        args, call_kwargs = self._binder.bind(kwargs)
        try:
            return self._call(*args, **call_kwargs)
        except Exception as exc:
            raise self._failure(exc) from exc

    def _failure(self, exc: Exception) -> ToolExecutionError:
        return ToolExecutionError(
            f"tool {self.name!r} raised {type(exc).__name__}: {exc}", tool_name=self.name
        )


def _copy(schema: dict[str, Any]) -> dict[str, Any]:
    # Callers may edit what they get; the cached schema must survive that.
    return copy.deepcopy(schema)


@overload
def tool(func: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    func: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Make a function a Tool; use bare (``@tool``) or with ``name=``/``description=``."""
    if func is not None:
        return Tool(func, name=name, description=description)

    def decorate(inner: Callable[P, R]) -> Tool[P, R]:
        return Tool(inner, name=name, description=description)

    return decorate
