"""The API on loopback (tests/api/support.py) and the command line in this process, on the
same Valkey and key prefix."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

import pytest
import structlog

from chatflow.handlers.cli import main, registry_cmd
from tests.api.support import ENCRYPTION_KEY, api, upstream
from tests.history.test_api import both

__all__ = ["Shell", "api", "both", "shell", "upstream"]


@dataclass
class Ran:
    code: int
    out: str
    err: str


Shell = Callable[..., Awaitable[Ran]]


@pytest.fixture
def shell(redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> Iterator[Shell]:
    """``await shell("tools", "versions", "t-1")`` runs ``chatflow`` with that prefix and key,
    in a thread (the command runs its own event loop, as from a terminal)."""
    monkeypatch.setenv("CHATFLOW_PREFIX", prefix)
    monkeypatch.setenv("CHATFLOW_ENCRYPTION_KEY", ENCRYPTION_KEY)
    # The CLI logs to stderr; here to the stderr capsys holds for this test.
    monkeypatch.setattr(registry_cmd, "configure_logging", lambda: structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(sys.stderr), cache_logger_on_first_use=False))

    async def run(*argv: str, env: dict[str, str] | None = None) -> Ran:
        capsys.readouterr()
        with monkeypatch.context() as patched:
            for name, value in (env or {}).items():
                patched.setenv(name, value)
            code = await asyncio.to_thread(main, [*argv, "--redis-url", redis_url])
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    yield run
    structlog.reset_defaults()
