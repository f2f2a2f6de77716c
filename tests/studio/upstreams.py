"""An outside API that answers with headers worth looking at: a plain one, a cookie, an
Authorization header, and one that echoes the credential it was sent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.http import LoopbackServer, Reply, Request

SECRET = "Bearer shop-secret-123"


def orders(request: Request) -> Reply:
    return 200, {"Content-Type": "application/json", "X-Request-Id": "req-42",
                 "Set-Cookie": "session=s3cr3t-cookie; HttpOnly",
                 "X-Echo": f"you sent {request.headers.get('authorization')}"}, \
        b'{"orders": [{"id": 1, "item": "<b>tea</b>"}]}'


@pytest.fixture
def answering() -> Iterator[LoopbackServer]:
    server = LoopbackServer()
    server.route("GET", "/orders", orders)
    server.start()
    try:
        yield server
    finally:
        server.stop()
