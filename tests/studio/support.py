"""The Studio under test: real Valkey, a real worker, the API on a loopback port, and Debian's
Chromium driven by Playwright (its own browser download cannot be reached from these machines).

Without Playwright or Chromium the browser tests skip and say how to get them; with CI=true
they fail instead, so CI never passes on skipped browser tests.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatflow.handlers.api import create_app
from chatflow.handlers.controlplane.apikeys import create_api_key
from tests.api.support import api_settings
from tests.harness import Harness
from tests.support.http import serve_asgi

SHOTS = Path(__file__).resolve().parents[2] / "screenshots"
HOW = ("install Chromium (`apt-get install chromium`, or set CHROMIUM=/path/to/chrome) and the "
       "test extra (`pip install -e '.[test]'`)")


def unavailable(reason: str, how: str = HOW) -> None:
    """Skip, saying ``how`` to get what is missing; under CI=true, fail."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"these tests cannot run in CI: {reason}; {how}")
    pytest.skip(f"{reason}: {how}")


def chromium_path() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and (found := shutil.which(candidate) or (os.path.exists(candidate) and candidate)):
            return str(found)
    return None


@dataclass
class Studio:
    base: str  # http://127.0.0.1:PORT
    http: httpx.AsyncClient  # the API, signed in as admin
    harness: Harness
    admin_key: str
    viewer_key: str
    page: Any  # playwright Page

    @property
    def url(self) -> str:
        return f"{self.base}/studio/"

    async def sign_in(self, key: str | None = None) -> None:
        from playwright.async_api import expect

        await self.page.goto(self.url)
        await self.page.get_by_label("API key").fill(key or self.admin_key)
        await self.page.get_by_role("button", name="Sign in").click()
        await expect(self.page.get_by_role("navigation", name="Main")).to_be_visible()

    async def shot(self, name: str) -> None:
        SHOTS.mkdir(exist_ok=True)
        await self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    @asynccontextmanager
    async def as_other_workspace(self) -> AsyncIterator[httpx.AsyncClient]:
        """The API as an admin of another workspace (``w2``)."""
        _key_id, token = await create_api_key(self.harness.client, self.harness.keys,
                                              workspace="w2", role="admin", name="elsewhere")
        async with httpx.AsyncClient(base_url=self.http.base_url, timeout=30,
                                     headers={"Authorization": f"Bearer {token}"}) as http:
            yield http

    async def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        response = await self.http.request(method, path, **kw)
        assert response.status_code == status, (response.status_code, response.text)
        return response.json()


async def make_key(harness: Harness, role: str) -> str:
    """An API key of ``role`` in workspace ``w1``, made as the CLI makes them."""
    _key_id, token = await create_api_key(harness.client, harness.keys, workspace="w1", role=role,
                                          name=f"studio {role}")
    return token


@asynccontextmanager
async def running_studio(redis_url: str, prefix: str, browser: Any,
                         **overrides: Any) -> AsyncIterator[Studio]:
    harness = Harness(redis_url, prefix, **overrides)
    await harness.start_worker()
    settings = api_settings(redis_url, prefix, **overrides)
    try:
        async with serve_asgi(create_app(settings)) as base:
            admin = await make_key(harness, "admin")
            viewer = await make_key(harness, "viewer")
            async with httpx.AsyncClient(base_url=base + "/api", timeout=30,
                                         headers={"Authorization": f"Bearer {admin}"}) as http:
                (await http.get("/openapi.json")).raise_for_status()  # lifespan done
                context = await browser.new_context(viewport={"width": 1280, "height": 900})
                page = await context.new_page()
                page.set_default_timeout(15_000)
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                try:
                    yield Studio(base, http, harness, admin, viewer, page)
                finally:
                    await context.close()
                assert not errors, f"the page threw: {errors}"
    finally:
        await harness.close()
