"""Shared fixtures: a real Valkey server (tests/support/valkey.py), and a runtime harness
around real workers.

Each test gets its own key prefix, so tests never see each other's streams and no
FLUSHALL is needed. Helpers live in tests/support: one loopback HTTP server (http.py), one
worker-process starter (processes.py), one Valkey fixture (valkey.py).
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
import structlog

from tests.harness import Harness

# `python -m pytest` puts the working directory first on sys.path; with it, the top-level
# folders (runtime/, handlers/, ...) would import under a second name beside chatflow.*.
# Tests import the installed names only (pytest runs in importlib mode, see pyproject).
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

pytest_plugins = ["tests.support.http", "tests.support.valkey"]

# A `chatflow up` run in the checkout leaves .chatflow/up.json, which every command run below it
# would read (handlers/cli/local_up.py): off for the tests and the processes they start, so they
# see only what they set. The tests of that file turn it on (tests/cli/test_local_up.py).
os.environ.setdefault("CHATFLOW_UP_FILE", "0")


@pytest.fixture(autouse=True)
def _structlog_as_found() -> Iterator[None]:
    """Each test leaves structlog as it found it. A test that runs a CLI command in-process
    points structlog at the stderr capsys holds, which is closed after the test: a later test
    of the same process logging through it would fail with "I/O operation on closed file"."""
    before = structlog.get_config()
    yield
    structlog.configure(**before)


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}:"


@pytest.fixture
async def client_only(redis_url: str, prefix: str) -> AsyncIterator[Harness]:
    """A harness with no in-process worker: the test runs worker processes, or drives the
    components itself."""
    h = Harness(redis_url, prefix)
    try:
        yield h
    finally:
        await h.close()


@pytest.fixture
async def harness(redis_url: str, prefix: str) -> AsyncIterator[Harness]:
    """A running worker plus a client, on a fresh prefix."""
    h = Harness(redis_url, prefix)
    try:
        await h.start_worker()
        yield h
    finally:
        await h.close()



if os.environ.get("CHATFLOW_TEST_EVENT_LOOP") == "uvloop":
    # Defined only when asked: pytest-asyncio refuses a hook that returns nothing.
    def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item
                                      ) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
        """Every async test on uvloop, the loop worker processes run on by default
        (handlers/operations/loop.py); unset, asyncio's own."""
        import uvloop

        return {"uvloop": uvloop.new_event_loop}
