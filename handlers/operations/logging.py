"""structlog set-up: JSON lines in production, readable console lines in a terminal."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import structlog

from ..redaction import redact_secrets


def configure_logging(level: str | None = None, *, json: bool | None = None,
                      stream: TextIO | None = None) -> None:
    """JSON lines in production (``CHATFLOW_ENV=production``, ``CHATFLOW_LOG_FORMAT=json``, or
    no terminal), console lines in development; secrets always pass ``redact_secrets``."""
    from ..settings import LogSettings  # here: the CLI's start-up does not pay for pydantic

    wanted = LogSettings()
    level = level or wanted.log_level
    if json is None:
        fmt, env = wanted.log_format.lower(), wanted.env.lower()
        json = fmt == "json" or (fmt != "console" and (env in ("production", "prod")
                                                      or not sys.stderr.isatty()))
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_execution_ids,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            redact_secrets,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=(structlog.WriteLoggerFactory(stream) if stream is not None
                        else _StderrLoggerFactory()),
        cache_logger_on_first_use=stream is None,
    )


class _StderrLogger:
    """Writes each line to whatever ``sys.stderr`` is at that moment.

    structlog's PrintLogger keeps the stream it was built with; a stream that is
    later replaced and closed (pytest's capture, a daemon's redirection) would
    then fail every log call, and with it the code that logs.
    """

    def msg(self, message: str) -> None:
        # One write per line: processes sharing a pipe (the supervisor's workers) must not
        # interleave a line with another's (print writes the text and its newline apart).
        sys.stderr.write(message + "\n")
        sys.stderr.flush()

    log = debug = info = warn = warning = error = critical = exception = fatal = msg


class _StderrLoggerFactory:
    def __call__(self, *args: Any) -> _StderrLogger:
        return _StderrLogger()


_EXECUTION: contextvars.ContextVar[Any] = contextvars.ContextVar("chatflow_execution",
                                                                 default=None)


@contextlib.contextmanager
def bound_execution(state: Any) -> Iterator[None]:
    """Bind an execution's command, execution, tool and contact ids to every log line inside.

    One ContextVar holds the state; ``add_execution_ids`` reads it only when a line is
    actually logged. Binding six structlog contextvars per step cost a tenth of a
    worker's CPU on the hot path, for lines that are rarely written.
    """
    token = _EXECUTION.set(state)
    try:
        yield
    finally:
        _EXECUTION.reset(token)


def enter_execution(state: Any) -> contextvars.Token[Any]:
    """``bound_execution`` without the context manager, for the hot path (a generator-based
    ``with`` costs more than the two ContextVar calls it wraps); pair with ``leave_execution``."""
    return _EXECUTION.set(state)


def leave_execution(token: contextvars.Token[Any]) -> None:
    _EXECUTION.reset(token)


# The process's tracing (handlers/operations/tracing.py) once a worker turned it on: a line
# logged inside a block of a sampled tree then carries the trace and the visit's span id.
_TRACING: Any = None


def use_tracing(tracing: Any) -> None:
    global _TRACING
    _TRACING = tracing


def add_execution_ids(_logger: Any, _method: str, event: Any) -> Any:
    state = _EXECUTION.get()
    if state is not None:
        event.setdefault("command_id", state.root.commandId)
        event.setdefault("execution_id", state.execId)
        event.setdefault("root_id", state.rootId)
        event.setdefault("tool_id", state.toolId)
        event.setdefault("published_tool_id", state.publishedToolId)
        event.setdefault("contact_id", state.root.contactId)
        if _TRACING is not None:
            ids = _TRACING.log_ids(state)
            if ids is not None:
                event.setdefault("trace_id", ids[0])
                event.setdefault("span_id", ids[1])
    return event
