"""Egress policy end to end: httpCall, callEndpoint and fetchMedia through a real worker,
against a loopback server; plus the pure policy (runtime/egress.py)."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import AsyncIterator

import pytest

from chatflow.runtime.egress import EgressDenied, EgressPolicy
from tests.core.tools import http, ret, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer


def redirect(location: str, status: int = 302) -> tuple[int, dict[str, str], bytes]:
    return status, {"Location": location}, b""


async def _harness(redis_url: str, prefix: str, **settings: str) -> AsyncIterator[Harness]:
    h = Harness(redis_url, prefix, **settings)
    await h.start_worker()
    try:
        yield h
    finally:
        await h.close()


@pytest.fixture
async def closed_loopback(redis_url: str, prefix: str) -> AsyncIterator[Harness]:
    """A worker whose deny list adds loopback to the defaults."""
    async for h in _harness(redis_url, prefix, egress_deny="default, 127.0.0.0/8, ::1"):
        yield h


@pytest.fixture
async def allow_localhost(redis_url: str, prefix: str) -> AsyncIterator[Harness]:
    """A worker in allow-list mode: only the host name ``localhost``."""
    async for h in _harness(redis_url, prefix, egress_allow="localhost"):
        yield h


def http_tool(url: str) -> dict[str, object]:
    return tool("h", http("h", url, {"type": "block", "blockId": "r"}, responseBodyVariable="body",
                          responseStatusVariable="status"), ret("r", "{{status}} {{body.path}}"))


async def _error_of(harness: Harness, pt: str, definition: dict[str, object]) -> tuple[str, str]:
    await harness.put_tool(pt, definition)
    result = await harness.run(pt)
    assert result.error is not None, result
    return result.error.code, result.error.message


async def test_the_cloud_metadata_address_is_denied_by_default(harness: Harness) -> None:
    code, message = await _error_of(harness, "pt-meta",
                                    http_tool("http://169.254.169.254/latest/meta-data/"))
    assert code == "egress_denied"
    assert "169.254.0.0/16" in message


async def test_a_metadata_host_name_is_denied_before_it_is_resolved(harness: Harness) -> None:
    code, message = await _error_of(harness, "pt-gce",
                                    http_tool("http://metadata.google.internal/computeMetadata/v1/"))
    assert code == "egress_denied" and "metadata.google.internal" in message


async def test_an_ipv4_mapped_ipv6_metadata_address_is_denied(harness: Harness) -> None:
    code, _ = await _error_of(harness, "pt-mapped", http_tool("http://[::ffff:169.254.169.254]/"))
    assert code == "egress_denied"


async def test_loopback_is_allowed_by_default(harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/ok", {"path": "ok"})
    await harness.put_tool("pt-ok", http_tool(f"{http_server.base}/ok"))
    result = await harness.run("pt-ok")
    assert result.ok and result.result == "200 ok"


async def test_a_denied_loopback_address_gets_a_clear_error_and_no_request_is_sent(
        closed_loopback: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/ok", {"path": "ok"})
    code, message = await _error_of(closed_loopback, "pt-closed", http_tool(f"{http_server.base}/ok"))
    assert code == "egress_denied" and "127.0.0.0/8" in message
    assert http_server.requests == []


async def test_a_name_that_resolves_to_a_denied_address_is_denied(
        closed_loopback: Harness, http_server: LoopbackServer) -> None:
    port = http_server.base.rsplit(":", 1)[1]
    code, message = await _error_of(closed_loopback, "pt-name", http_tool(f"http://localhost:{port}/ok"))
    assert code == "egress_denied" and "resolves to" in message
    assert http_server.requests == []


async def test_a_redirect_to_a_denied_address_is_refused(
        harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/go", lambda _r: redirect("http://169.254.169.254/latest/meta-data/"))
    code, message = await _error_of(harness, "pt-redir", http_tool(f"{http_server.base}/go"))
    assert code == "egress_denied" and "169.254.169.254" in message
    assert [r.path for r in http_server.requests] == ["/go"]


async def test_a_redirect_to_an_allowed_address_is_followed(
        harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/go", lambda _r: redirect("/there", 307))
    http_server.route("GET", "/there", {"path": "there"})
    await harness.put_tool("pt-follow", http_tool(f"{http_server.base}/go"))
    result = await harness.run("pt-follow")
    assert result.ok and result.result == "200 there"


async def test_a_redirect_loop_stops_with_a_clear_error(
        harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/loop", lambda _r: redirect("/loop"))
    code, _ = await _error_of(harness, "pt-loop", http_tool(f"{http_server.base}/loop"))
    assert code == "http_too_many_redirects"
    assert len(http_server.requests) == 6


async def test_allow_list_mode_lets_through_only_the_listed_host(
        allow_localhost: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/ok", {"path": "ok"})
    port = http_server.base.rsplit(":", 1)[1]
    await allow_localhost.put_tool("pt-named", http_tool(f"http://localhost:{port}/ok"))
    assert (await allow_localhost.run("pt-named")).result == "200 ok"
    code, message = await _error_of(allow_localhost, "pt-other", http_tool(f"{http_server.base}/ok"))
    assert code == "egress_denied" and "allow list" in message


async def test_call_endpoint_to_a_denied_server_gets_egress_denied(harness: Harness) -> None:
    server = {"id": "srv-meta", "name": "meta", "baseUrl": "http://169.254.169.254", "headers": {},
              "endpoints": {"ep-1": {"id": "ep-1", "name": "creds", "path": "/latest/meta-data",
                                     "method": "GET", "headers": {}, "bodyTemplate": None,
                                     "params": []}}}
    await harness.client.set(harness.keys.server("srv-meta"), json.dumps(server))
    block = {"type": "callEndpoint", "id": "c", "serverId": "srv-meta", "endpointId": "ep-1",
             "paramMappings": [], "onError": "blocking", "outputConditions": [],
             "defaultOutput": {"type": "block", "blockId": "r"}}
    code, _ = await _error_of(harness, "pt-ep", tool("c", block, ret("r", "x")))
    assert code == "egress_denied"


async def test_fetch_media_from_a_denied_url_gets_egress_denied(harness: Harness) -> None:
    block = {"type": "fetchMedia", "id": "m", "mode": "url", "mediaIdVariable": "",
             "urlVariable": "http://169.254.169.254/media.ogg", "base64Variable": "b64",
             "mimeTypeVariable": "mime", "onError": "blocking", "outputConditions": [],
             "defaultOutput": {"type": "block", "blockId": "r"}}
    code, _ = await _error_of(harness, "pt-media", tool("m", block, ret("r", "x")))
    assert code == "egress_denied"


async def test_the_size_cap_still_applies_to_an_allowed_destination(
        harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/big", lambda _r: (200, {"Content-Type": "text/plain"},
                                                 b"x" * (10 * 1024 * 1024 + 1)))
    code, _ = await _error_of(harness, "pt-big", http_tool(f"{http_server.base}/big"))
    assert code == "http_body_too_large"


# -- the pure policy ---------------------------------------------------------------------------

def _addr(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


@pytest.mark.parametrize("address", ["169.254.169.254", "169.254.1.1", "fe80::1", "fd00:ec2::254",
                                     "::ffff:169.254.169.254", "100.100.100.200"])
def test_the_default_policy_denies_metadata_and_link_local_addresses(address: str) -> None:
    with pytest.raises(EgressDenied):
        EgressPolicy.parse().check("example.com", [_addr(address)])


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "10.1.2.3", "93.184.216.34"])
def test_the_default_policy_allows_loopback_private_and_public_addresses(address: str) -> None:
    EgressPolicy.parse().check("example.com", [_addr(address)])


def test_one_denied_address_among_many_denies_the_host() -> None:
    with pytest.raises(EgressDenied, match=r"169\.254\.169\.254"):
        EgressPolicy.parse().check("rebind.example", [_addr("93.184.216.34"), _addr("169.254.169.254")])


def test_an_empty_deny_list_opens_the_default_ranges() -> None:
    EgressPolicy.parse(deny="").check("metadata.google.internal", [_addr("169.254.169.254")])


def test_host_suffix_rules_match_the_domain_and_its_subdomains() -> None:
    policy = EgressPolicy.parse(allow="*.example.com, 10.0.0.0/8", deny="default, bad.example.com")
    policy.check("api.example.com", [_addr("93.184.216.34")])
    policy.check("example.com", [_addr("93.184.216.34")])
    policy.check("internal.test", [_addr("10.9.9.9")])
    with pytest.raises(EgressDenied, match=r"denied by egress rule bad\.example\.com"):
        policy.check("bad.example.com", [_addr("93.184.216.34")])
    with pytest.raises(EgressDenied, match="allow list"):
        policy.check("example.org", [_addr("93.184.216.34")])
    with pytest.raises(EgressDenied, match="allow list"):
        policy.check("mixed.test", [_addr("10.0.0.1"), _addr("11.0.0.1")])


def test_a_malformed_rule_is_refused_when_the_policy_is_built() -> None:
    with pytest.raises(ValueError, match="egress rule"):
        EgressPolicy.parse(deny="10.0.0.0/99")


# -- unspecified and IPv4-carrying IPv6 addresses ------------------------------------------------

PRODUCTION_DENY = "default,127.0.0.0/8,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"


@pytest.mark.parametrize("deny", ["default", PRODUCTION_DENY])
@pytest.mark.parametrize("address", ["0.0.0.0", "::", "::ffff:0.0.0.0", "0.1.2.3"])
def test_unspecified_addresses_are_denied(deny: str, address: str) -> None:
    with pytest.raises(EgressDenied):
        EgressPolicy.parse(deny=deny).check("example.com", [_addr(address)])


@pytest.mark.parametrize("address", [
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b::169.254.169.254",
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "::169.254.169.254",  # IPv4-compatible
])
def test_ipv6_forms_of_a_denied_ipv4_address_are_denied(address: str) -> None:
    with pytest.raises(EgressDenied, match=r"169\.254\.0\.0/16"):
        EgressPolicy.parse().check("example.com", [_addr(address)])


@pytest.mark.parametrize("address", ["64:ff9b::7f00:1", "2002:7f00:1::", "::127.0.0.1"])
def test_ipv6_forms_of_loopback_are_denied_by_the_production_list(address: str) -> None:
    with pytest.raises(EgressDenied, match=r"127\.0\.0\.0/8"):
        EgressPolicy.parse(deny=PRODUCTION_DENY).check("example.com", [_addr(address)])


@pytest.mark.parametrize("address", ["64:ff9b::5db8:d822", "2002:5db8:d822::", "::1", "2001:db8::1"])
def test_ipv6_forms_of_an_allowed_address_stay_allowed(address: str) -> None:
    EgressPolicy.parse().check("example.com", [_addr(address)])


async def test_the_unspecified_address_cannot_reach_the_runtimes_own_services(
        harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/ok", {"path": "ok"})
    port = http_server.base.rsplit(":", 1)[1]
    for host in ("0.0.0.0", "[::ffff:0.0.0.0]"):
        code, _ = await _error_of(harness, "pt-zero", http_tool(f"http://{host}:{port}/ok"))
        assert code == "egress_denied"
    assert http_server.requests == []
