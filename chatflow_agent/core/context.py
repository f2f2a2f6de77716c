"""``RunContext``: what a tool may learn about the run that called it."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .usage import Usage

Deps = TypeVar("Deps")


@dataclass
class RunContext(Generic[Deps]):
    """Given to a tool whose first parameter is annotated ``RunContext[Deps]``.

    ``deps`` is the ``context=`` passed to ``Runner.run``; ``usage`` is the run's
    token usage so far. The parameter is never part of a tool's schema.
    """

    deps: Deps
    session_id: str = ""
    usage: Usage = field(default_factory=Usage)


# Set by the Runner around each tool call, so every kind of tool can read it.
current_run_context: contextvars.ContextVar[RunContext[Any] | None] = contextvars.ContextVar(
    "chatflow_agent_run_context", default=None
)
