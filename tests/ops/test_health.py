"""`/health/ready` always names its cause when it answers 503."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx
import pytest

from chatflow.handlers.operations import health
from chatflow.handlers.operations.health import HealthServer


async def ready_body(check: Callable[[], Awaitable[tuple[bool, str]]]) -> tuple[int, str]:
    server = await HealthServer("127.0.0.1", 0, check).start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.bound_port}") as http:
            response = await http.get("/health/ready")
    finally:
        await server.stop()
    return response.status_code, response.text


async def test_a_failing_readiness_check_names_the_error_even_when_its_message_is_empty() -> None:
    async def broken() -> tuple[bool, str]:
        raise ConnectionResetError()

    status, body = await ready_body(broken)
    assert status == 503
    assert body.strip() == "readiness check failed: ConnectionResetError"


async def test_a_hanging_readiness_check_says_it_timed_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "READY_TIMEOUT_S", 0.2)

    async def hangs() -> tuple[bool, str]:
        await asyncio.Event().wait()
        return True, "never"

    status, body = await ready_body(hangs)
    assert status == 503 and "did not answer within 0.2 s" in body
