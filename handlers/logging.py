"""structlog set-up: JSON lines in production, readable console lines in a terminal."""

from __future__ import annotations

import logging
import os
import sys

import structlog

from .redaction import redact_secrets


def configure_logging(level: str | None = None, *, json: bool | None = None) -> None:
    level = level or os.environ.get("CHATFLOW_LOG_LEVEL", "INFO")
    if json is None:
        json = os.environ.get("CHATFLOW_LOG_FORMAT", "").lower() == "json" or not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            redact_secrets,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
