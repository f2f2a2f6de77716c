"""Variables in an httpCall URL are encoded for where they land and never pick the host."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatflow.runtime.interpolation import UnsafeUrlTemplate, render_url
from tests.core.tools import http, ret, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer


@pytest.fixture
def other_server() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()


def _http_tool(url: str) -> dict[str, object]:
    return tool("h", http("h", url, {"type": "block", "blockId": "r"}, responseStatusVariable="s"),
                ret("r", "{{s}}"))


async def test_a_path_variable_cannot_climb_out_of_its_segment(
        harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/admin/delete", {"deleted": True})
    await harness.put_tool("pt-path", _http_tool(f"{http_server.base}/api/v1/users/{{{{id}}}}"))
    await harness.run("pt-path", variables={"id": "../../../admin/delete?all=true#"})
    assert [r.path for r in http_server.requests] == [
        "/api/v1/users/..%2F..%2F..%2Fadmin%2Fdelete%3Fall%3Dtrue%23"]


async def test_a_variable_after_the_port_cannot_send_the_request_elsewhere(
        harness: Harness, http_server: LoopbackServer, other_server: LoopbackServer) -> None:
    other_server.route("GET", "/ok.json", {"reached": True})
    port, other_port = http_server.base.rsplit(":", 1)[1], other_server.base.rsplit(":", 1)[1]
    await harness.put_tool("pt-port", _http_tool(f"http://127.0.0.1:{port}{{{{id}}}}"))
    result = await harness.run("pt-port", variables={"id": f"@localhost:{other_port}/ok.json"})
    assert result.error is not None and result.error.code == "http_invalid_url"
    assert "scheme, host or port" in result.error.message
    assert other_server.requests == [] and http_server.requests == []


async def test_a_whole_url_variable_is_still_egress_checked(harness: Harness) -> None:
    await harness.put_tool("pt-whole", _http_tool("{{target}}"))
    result = await harness.run("pt-whole", variables={"target": "http://169.254.169.254/latest"})
    assert result.error is not None and result.error.code == "egress_denied"


@pytest.mark.parametrize(("template", "values", "expected"), [
    ("http://h/a/{{x}}", {"x": ".."}, "http://h/a/%2E%2E"),
    ("http://h/a/{{x}}.json", {"x": "a b/c"}, "http://h/a/a%20b%2Fc.json"),
    ("http://h/s?q={{q}}&n=1", {"q": "x&admin=true"}, "http://h/s?q=x%26admin%3Dtrue&n=1"),
    ("http://h/s#{{f}}", {"f": "a#b"}, "http://h/s#a%23b"),
    ("http://h/{{id}}", {"id": 42}, "http://h/42"),
    ("  {{url}}  ", {"url": "https://api.example.com/x?y=1"}, "https://api.example.com/x?y=1"),
    ("https://api.example.com/users", {}, "https://api.example.com/users"),
])
def test_values_are_encoded_for_the_part_of_the_url_they_land_in(
        template: str, values: dict[str, object], expected: str) -> None:
    assert render_url(template, values, {}) == expected


@pytest.mark.parametrize("template", [
    "{{scheme}}://h/x", "http://{{host}}/x", "http://h:{{port}}/x", "http://h{{rest}}",
    "{{base}}/users/{{id}}", "http://user:{{password}}@h/x",
])
def test_scheme_host_and_port_cannot_come_from_a_variable(template: str) -> None:
    with pytest.raises(UnsafeUrlTemplate, match="scheme, host or port"):
        render_url(template, {}, {})
