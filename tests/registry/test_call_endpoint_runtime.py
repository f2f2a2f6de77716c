"""callEndpoint end to end: registry → integration:server cache → stream runtime → upstream."""

from __future__ import annotations

from typing import Any

from tests.api.support import Api, Upstream
from tests.harness import Harness
from tests.registry.defs import call_endpoint, definition, ret, to


async def make_server(api: Api, upstream: Upstream) -> None:
    await api.ok("POST", "/integration-servers", 201, json={
        "id": "srv-shop", "name": "Shop", "baseUrl": upstream.url + "/v1",
        "headers": [{"name": "Authorization", "value": "Bearer s3cr3t-token", "secret": True},
                    {"name": "X-Tenant", "value": "acme"}]})
    await api.ok("POST", "/integration-servers/srv-shop/endpoints", 201, json={
        "id": "ep-order", "name": "createOrder", "path": "/orders/{orderId}", "method": "POST",
        "headers": [{"name": "X-Tenant", "value": "acme-orders"}],
        "bodyTemplate": {"source": "chatflow", "meta": {"v": 1}},
        "params": [{"name": "orderId", "in": "route", "required": True},
                   {"name": "dry", "in": "query"}, {"name": "qty", "in": "body"}]})


async def publish(api: Api, tool_id: str, definition_: dict[str, Any]) -> str:
    await api.ok("POST", "/tools", 201, json={"id": tool_id, "name": tool_id,
                                              "definition": definition_})
    return str((await api.ok("POST", f"/tools/{tool_id}/publish"))["publishedToolId"])


async def test_a_call_endpoint_tool_runs_through_the_stream_runtime(
        api: Api, harness: Harness, upstream: Upstream) -> None:
    await make_server(api, upstream)
    block = call_endpoint("ce", "srv-shop", "ep-order", [
        {"name": "orderId", "in": "route", "value": "{{order}}"},
        {"name": "dry", "in": "query", "value": "yes"},
        {"name": "qty", "in": "body", "value": "{{qty}}"},
        {"name": "meta.note", "in": "body", "value": "for {{name}}"}])
    pt = await publish(api, "t-order", definition(block, ret("{{status}}:{{resp.body.qty}}")))

    result = await harness.run(pt, inputs={"order": "A/7", "qty": "{{n}}"},
                               variables={"n": 3, "name": "Ana"})

    assert result.ok, result.error
    assert result.result == "200:3"
    (seen,) = upstream.requests
    assert (seen.method, seen.path, seen.query) == ("POST", "/v1/orders/A%2F7", {"dry": "yes"})
    assert seen.headers["authorization"] == "Bearer s3cr3t-token"
    assert seen.headers["x-tenant"] == "acme-orders"  # endpoint headers after server headers
    assert seen.body == {"source": "chatflow", "meta": {"v": 1, "note": "for Ana"}, "qty": "3"}


async def test_a_failing_endpoint_fills_the_error_variable_when_on_error_is_continue(
        api: Api, harness: Harness, upstream: Upstream) -> None:
    await api.ok("POST", "/integration-servers", 201, json={
        "id": "srv-bad", "name": "Bad", "baseUrl": upstream.url})
    await api.ok("POST", "/integration-servers/srv-bad/endpoints", 201, json={
        "id": "ep-500", "name": "boom", "path": "/status/503", "method": "GET"})
    block = call_endpoint("ce", "srv-bad", "ep-500", [], onError="continue",
                          errorVariable="err")
    pt = await publish(api, "t-bad", definition(block, ret("{{status}}|{{err}}")))
    result = await harness.run(pt)
    assert result.ok
    assert result.result == f"503|GET {upstream.url}/status/503: HTTP 503"


async def test_a_blocking_endpoint_failure_fails_the_tool(
        api: Api, harness: Harness, upstream: Upstream) -> None:
    await make_server(api, upstream)
    block = call_endpoint("ce", "srv-shop", "ep-order", [], nxt="r")
    pt = await publish(api, "t-gone", definition(block, ret()))
    await api.client.delete(api.keys.server("srv-shop"))  # the cache lost: the runtime says so
    result = await harness.run(pt)
    assert not result.ok and result.error is not None
    assert result.error.code == "endpoint_server_not_found"
    assert result.error.message == "servidor de integração não encontrado: serverId=srv-shop"


async def test_the_server_cache_holds_endpoints_and_decrypted_headers(
        api: Api, upstream: Upstream) -> None:
    await make_server(api, upstream)
    cache = await api.get_key(api.keys.server("srv-shop"))
    assert cache["baseUrl"] == upstream.url + "/v1"
    assert cache["headers"] == {"Authorization": "Bearer s3cr3t-token", "X-Tenant": "acme"}
    endpoint = cache["endpoints"]["ep-order"]
    assert (endpoint["path"], endpoint["method"]) == ("/orders/{orderId}", "POST")
    assert endpoint["bodyTemplate"] == {"source": "chatflow", "meta": {"v": 1}}
    assert [p["name"] for p in endpoint["params"]] == ["orderId", "dry", "qty"]


async def test_navigation_after_a_call_endpoint_block_follows_its_conditions(
        api: Api, harness: Harness, upstream: Upstream) -> None:
    await make_server(api, upstream)
    cond = {"id": "is-ok", "rules": [{"variable": "status", "operator": "equals",
                                      "value": "200"}], "target": to("yes")}
    block = call_endpoint("ce", "srv-shop", "ep-order",
                          [{"name": "orderId", "in": "route", "value": "1"}],
                          nxt="no", outputConditions=[cond])
    pt = await publish(api, "t-nav", definition(block, ret("yes", "yes"), ret("no", "no")))
    assert (await harness.run(pt)).result == "yes"
