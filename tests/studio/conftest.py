from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.support import api, upstream
from tests.studio.support import Studio, chromium_path, running_studio, unavailable

__all__ = ["api", "browser", "studio", "upstream"]


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        unavailable("Playwright for Python is not installed")
    path = chromium_path()
    if path is None:
        unavailable("no Chromium found")
    async with async_playwright() as pw:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        chromium = await pw.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest.fixture
async def studio(redis_url: str, prefix: str, browser: Any) -> AsyncIterator[Studio]:
    async with running_studio(redis_url, prefix, browser) as s:
        yield s


@pytest.fixture
async def history_studio(redis_url: str, prefix: str, browser: Any,
                         tmp_path: Path) -> AsyncIterator[Studio]:
    """The Studio with a run history (SQLite in the test's folder)."""
    url = f"sqlite:///{tmp_path / 'history.db'}"
    async with running_studio(redis_url, prefix, browser, history_url=url,
                              history_auto_migrate=True) as s:
        yield s
