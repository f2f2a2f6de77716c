"""buildEndpointBody, the endpoint URL and header layering (pure), and the callEndpoint
flow action against a loopback server."""

from __future__ import annotations

import json

import pytest

from chatflow.runtime.blocks.endpoint import run_call_endpoint_action
from chatflow.runtime.egress import DEFAULT_POLICY
from chatflow.runtime.outbound import Outbound
from chatflow.runtime.registry.endpoints import (
    build_endpoint_body,
    build_endpoint_url,
    merge_headers,
    prepare_request,
)
from tests.api.support import Upstream


def test_the_body_is_the_template_with_body_params_laid_over_it() -> None:
    template = {"a": 1, "nested": {"keep": True}}
    assert build_endpoint_body(template, {"b": 2, "nested.x": "y"}) == {
        "a": 1, "b": 2, "nested": {"keep": True, "x": "y"}}
    assert template == {"a": 1, "nested": {"keep": True}}  # the template is not changed


def test_a_template_given_as_json_text_is_parsed_and_no_template_no_params_means_no_body(
        ) -> None:
    assert build_endpoint_body('{"a": 1}', {"b": 2}) == {"a": 1, "b": 2}
    assert build_endpoint_body(None, {}) is None
    assert build_endpoint_body(None, {"q": 1}) == {"q": 1}
    with pytest.raises(ValueError, match="not a JSON object"):
        build_endpoint_body([1, 2], {"b": 2})


def test_the_url_is_base_plus_path_with_route_params_encoded_and_query_appended() -> None:
    assert build_endpoint_url("http://h/api/", "/users/{id}/x", {"id": "a b/c"},
                              {"q": "1", "r": "é"}) == "http://h/api/users/a%20b%2Fc/x?q=1&r=%C3%A9"
    assert build_endpoint_url("http://h", "/s?fixed=1", {}, {"q": 2}) == "http://h/s?fixed=1&q=2"


def test_endpoint_headers_override_server_headers_whatever_their_case() -> None:
    assert merge_headers({"Authorization": "a", "X": "1"}, {"authorization": "b"}) == {
        "X": "1", "authorization": "b"}


def test_a_json_body_gets_a_content_type_and_a_get_without_body_params_sends_none() -> None:
    server = {"baseUrl": "http://h", "headers": {}}
    post = prepare_request(server, {"path": "/p", "method": "POST", "bodyTemplate": {"a": 1}},
                           [("b", "body", 2)])
    assert json.loads(post.content or "") == {"a": 1, "b": 2}
    assert post.headers["Content-Type"] == "application/json"
    get = prepare_request(server, {"path": "/p", "method": "GET", "bodyTemplate": {"a": 1}}, [])
    assert get.content is None


async def test_the_call_endpoint_flow_action_applies_its_variables_and_on_error(
        upstream: Upstream) -> None:
    config = {"id": "s", "baseUrl": upstream.url, "headers": {"Authorization": "k"},
              "endpoints": {"e": {"id": "e", "path": "/items/{id}", "method": "GET"},
                            "bad": {"id": "bad", "path": "/status/500", "method": "GET"}}}

    class Servers:
        async def get_server(self, server_id: str) -> bytes | None:
            return json.dumps(config).encode() if server_id == "s" else None

    async with Outbound(DEFAULT_POLICY) as http:
        ok = await run_call_endpoint_action(http, Servers(), {
            "serverId": "s", "endpointId": "e", "responseBodyVariable": "body",
            "responseStatusVariable": "st",
            "paramMappings": [{"name": "id", "in": "route", "value": "{{item}}"}]},
            {"item": 7})
        assert ok["ok"] and ok["variables"]["st"] == 200
        assert ok["variables"]["body"]["path"] == "/items/7"
        soft = await run_call_endpoint_action(http, Servers(), {
            "serverId": "s", "endpointId": "bad", "onError": "continue",
            "errorVariable": "err", "responseStatusVariable": "st"}, {})
        assert soft["next"] == "continue" and soft["variables"]["st"] == 500
        assert soft["variables"]["err"].endswith("HTTP 500")
        hard = await run_call_endpoint_action(http, Servers(), {
            "serverId": "nope", "endpointId": "e", "errorHandoff": False}, {})
        assert hard["next"] == "defaultException"
        assert hard["error"]["code"] == "endpoint_server_not_found"
