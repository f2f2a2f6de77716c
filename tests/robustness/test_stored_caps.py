"""Issue 21.2: what an execution keeps from HTTP is bounded. An httpCall or callEndpoint body
past CHATFLOW_HTTP_MAX_BODY_BYTES is ``http_body_too_large``, a fetched media item past
CHATFLOW_MEDIA_MAX_BYTES is ``media_too_large``, each under the block's onError; the read stops
at the cap (an endless body still ends the block)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.core.tools import http, ret, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer
from tests.support.raw_http import Origin, endless, origin

CAP = 4096


@pytest.fixture
async def capped(redis_url: str, prefix: str) -> AsyncIterator[Harness]:
    h = Harness(redis_url, prefix, http_max_body_bytes=CAP, media_max_bytes=CAP)
    await h.start_worker()
    try:
        yield h
    finally:
        await h.close()


@pytest.fixture
async def stream() -> AsyncIterator[Origin]:
    async with origin(endless) as server:
        yield server


def _goto(block_id: str) -> dict[str, str]:
    return {"type": "block", "blockId": block_id}


async def test_an_http_body_over_the_cap_is_http_body_too_large_and_names_the_setting(
        capped: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/big", lambda _r: (200, {"Content-Type": "text/plain"},
                                                 b"x" * (CAP + 1)))
    http_server.route("GET", "/fits", lambda _r: (200, {"Content-Type": "text/plain"}, b"x" * CAP))
    await capped.put_tool("pt-big", tool("h", http("h", http_server.base + "/big", _goto("r"),
                                                   responseBodyVariable="body"), ret("r", "x")))
    await capped.put_tool("pt-fits", tool("h", http("h", http_server.base + "/fits", _goto("r"),
                                                    responseBodyVariable="body"),
                                          ret("r", "{{body}}")))
    result = await capped.run("pt-big")
    assert result.error is not None and result.error.code == "http_body_too_large"
    assert "CHATFLOW_HTTP_MAX_BODY_BYTES" in result.error.message
    assert (await capped.run("pt-fits")).result == "x" * CAP


async def test_an_endless_http_body_stops_at_the_cap_under_on_error_continue(
        capped: Harness, stream: Origin) -> None:
    block = http("h", stream.base + "/stream", _goto("r"), on_error="continue",
                 errorVariable="err", responseBodyVariable="body")
    await capped.put_tool("pt-endless", tool("h", block, ret("r", "[{{body}}] {{err}}")))
    result = await capped.run("pt-endless")
    assert result.error is None, result.error
    assert isinstance(result.result, str) and result.result.startswith("[] GET ")
    assert f"resposta maior que {CAP} bytes" in result.result


async def test_a_call_endpoint_body_over_the_cap_is_http_body_too_large(
        capped: Harness, stream: Origin) -> None:
    server: dict[str, Any] = {
        "id": "srv-big", "name": "big", "baseUrl": stream.base, "headers": {},
        "endpoints": {"ep-1": {"id": "ep-1", "name": "dump", "path": "/dump", "method": "GET",
                               "headers": {}, "bodyTemplate": None, "params": []}}}
    await capped.client.set(capped.keys.server("srv-big"), json.dumps(server))
    block = {"type": "callEndpoint", "id": "c", "serverId": "srv-big", "endpointId": "ep-1",
             "paramMappings": [], "onError": "blocking", "outputConditions": [],
             "responseBodyVariable": "body", "defaultOutput": _goto("r")}
    await capped.put_tool("pt-ep-big", tool("c", block, ret("r", "x")))
    result = await capped.run("pt-ep-big")
    assert result.error is not None and result.error.code == "http_body_too_large"


async def test_an_endless_media_download_stops_at_the_cap_as_media_too_large(
        capped: Harness, stream: Origin) -> None:
    block = {"type": "fetchMedia", "id": "m", "mode": "url", "mediaIdVariable": "",
             "urlVariable": stream.base + "/media.ogg", "base64Variable": "b64",
             "mimeTypeVariable": "mime", "onError": "blocking", "outputConditions": [],
             "defaultOutput": _goto("r")}
    await capped.put_tool("pt-media-big", tool("m", block, ret("r", "x")))
    result = await capped.run("pt-media-big")
    assert result.error is not None and result.error.code == "media_too_large"
    assert f"{CAP} bytes" in result.error.message
