"""An integration server's extensions through the registry API: saved, validated (the
field named), carried to the runtime's cache, and its circuit shown on
``GET /api/integration-servers/{id}``; idempotency keys renamed or turned off per server."""

from __future__ import annotations

import time
from typing import Any

from tests.api.support import Api, Upstream
from tests.harness import Harness
from tests.registry.defs import call_endpoint, definition, ret

EXTENSIONS = {
    "retry": {"maxAttempts": 4, "initialIntervalMs": 10, "maxIntervalMs": 50},
    "limits": {"requestsPerSecond": 100, "maxConcurrent": 5},
    "circuitBreaker": {"failureThreshold": 2, "windowMs": 10_000, "cooldownMs": 60_000},
    "idempotencyHeader": "X-Request-Key",
}


async def _server(api: Api, upstream: Upstream, server_id: str, path: str, method: str,
                  **extensions: Any) -> None:
    await api.ok("POST", "/integration-servers", 201, json={
        "id": server_id, "name": server_id, "baseUrl": upstream.url, **extensions})
    await api.ok("POST", f"/integration-servers/{server_id}/endpoints", 201, json={
        "id": "ep", "name": "ep", "path": path, "method": method})


async def _publish(api: Api, tool_id: str, server_id: str) -> str:
    block = call_endpoint("ce", server_id, "ep", [])
    await api.ok("POST", "/tools", 201, json={"id": tool_id, "name": tool_id,
                                              "definition": definition(block, ret("{{status}}"))})
    return str((await api.ok("POST", f"/tools/{tool_id}/publish"))["publishedToolId"])


async def test_a_server_s_extensions_are_saved_cached_and_validated_by_name(
        api: Api, upstream: Upstream) -> None:
    await _server(api, upstream, "srv", "/x", "GET", **EXTENSIONS)
    view = await api.ok("GET", "/integration-servers/srv")
    assert {k: view[k] for k in EXTENSIONS} == EXTENSIONS  # as given: defaults stay implicit
    assert view["circuit"] == {"state": "closed", "failures": 0, "openedAt": None}
    cache = await api.get_key(api.keys.server("srv"))
    assert cache["limits"]["maxConcurrent"] == 5 and cache["idempotencyHeader"] == "X-Request-Key"
    bad = await api.fails("PATCH", "/integration-servers/srv", 400,
                          json={"retry": {"maxAtempts": 3}})
    assert "maxAtempts" in bad["message"], bad
    bad = await api.fails("PATCH", "/integration-servers/srv", 400,
                          json={"limits": {"requestsPerSecond": 0}})
    assert "requestsPerSecond" in bad["message"], bad
    await api.ok("PATCH", "/integration-servers/srv", json={"limits": None})
    assert "limits" not in await api.get_key(api.keys.server("srv"))


async def test_the_api_shows_a_server_s_circuit_open_with_its_failures(
        api: Api, upstream: Upstream, harness: Harness) -> None:
    await _server(api, upstream, "srv-down", "/status/503", "GET",
                  circuitBreaker={"failureThreshold": 2, "windowMs": 10_000,
                                  "cooldownMs": 60_000})
    pt = await _publish(api, "t-down", "srv-down")
    before = time.time()
    codes = [(await harness.run(pt)).error for _ in range(3)]
    assert [e.code if e else None for e in codes] == ["http_status", "http_status",
                                                      "circuit_open"]
    circuit = (await api.ok("GET", "/integration-servers/srv-down"))["circuit"]
    assert (circuit["state"], circuit["failures"]) == ("open", 2), circuit
    assert circuit["openedAt"] >= time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(before - 1))
    assert len(upstream.requests) == 2
    # A person's Test call counts too: refused by the open circuit, nothing sent.
    tested = await api.ok("POST", "/integration-servers/srv-down/endpoints/ep/test", json={})
    assert tested["error"]["code"] == "circuit_open", tested
    assert len(upstream.requests) == 2


async def test_non_get_calls_carry_the_server_s_key_header_or_none_and_gets_none(
        api: Api, upstream: Upstream, harness: Harness) -> None:
    await _server(api, upstream, "srv-named", "/orders", "POST", idempotencyHeader="X-Key")
    await _server(api, upstream, "srv-off", "/orders", "POST", idempotencyHeader=None)
    await _server(api, upstream, "srv-default", "/orders", "PUT")
    await _server(api, upstream, "srv-get", "/orders", "GET")
    for server in ("srv-named", "srv-off", "srv-default", "srv-get"):
        result = await harness.run(await _publish(api, f"t-{server}", server))
        assert result.ok, result
    named, off, default, get = upstream.requests
    assert len(named.headers["x-key"]) == 32 and "idempotency-key" not in named.headers
    assert "idempotency-key" not in off.headers and "x-key" not in off.headers
    assert len(default.headers["idempotency-key"]) == 32
    assert "idempotency-key" not in get.headers
    keys = {named.headers["x-key"], default.headers["idempotency-key"]}
    assert len(keys) == 2  # another execution, another key
