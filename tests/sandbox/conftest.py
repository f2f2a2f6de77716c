from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # lets `pytest` (not only `python -m pytest`) import runtime
    sys.path.insert(0, str(ROOT))

from sandbox_helpers import ROOMY_LIMITS, TEST_LIMITS  # noqa: E402

from runtime.sandbox import ScriptSandbox  # noqa: E402


@pytest.fixture(params=["process", "in_process"])
def isolation(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def sandbox(isolation: str) -> AsyncIterator[ScriptSandbox]:
    box = ScriptSandbox(TEST_LIMITS, isolation=isolation)  # type: ignore[arg-type]
    yield box
    box.close()


@pytest.fixture
async def roomy_sandbox(isolation: str) -> AsyncIterator[ScriptSandbox]:
    """Generous time limit, so that memory bombs reach the memory limit first."""
    box = ScriptSandbox(ROOMY_LIMITS, isolation=isolation)  # type: ignore[arg-type]
    yield box
    box.close()
