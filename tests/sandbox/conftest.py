from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from chatflow.runtime.sandbox import ScriptSandbox
from tests.sandbox.sandbox_helpers import ROOMY_LIMITS, TEST_LIMITS


@pytest.fixture(params=["process", "in_process"])
def isolation(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def sandbox(isolation: str) -> AsyncIterator[ScriptSandbox]:
    # One lane: these tests look at one context's behaviour (tests/sandbox/test_lanes.py
    # covers several lanes).
    box = ScriptSandbox(TEST_LIMITS, isolation=isolation, lanes=1)  # type: ignore[arg-type]
    yield box
    await box.aclose()


@pytest.fixture
async def roomy_sandbox(isolation: str) -> AsyncIterator[ScriptSandbox]:
    """Generous time limit, so that memory bombs reach the memory limit first."""
    box = ScriptSandbox(ROOMY_LIMITS, isolation=isolation, lanes=1)  # type: ignore[arg-type]
    yield box
    await box.aclose()
