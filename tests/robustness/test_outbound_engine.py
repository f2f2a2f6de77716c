"""Outbound's engine (aiohttp, docs/http.md) keeps every guarantee httpx gave: connections are
reused under load, TLS is verified against the host name while the connection goes to the
checked address, no cookie travels between requests, and a body cap stops the read."""

from __future__ import annotations

import asyncio
import ssl

import pytest
import trustme

from chatflow.runtime.egress import DEFAULT_POLICY
from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.outbound import Outbound, default_tls
from tests.support.raw_http import endless, origin


async def get(outbound: Outbound, url: str, **kw: object) -> tuple[int, bytes, str]:
    return await outbound.send("GET", url, headers={}, content=None, timeout_s=30, **kw)  # type: ignore[arg-type]


async def test_connections_to_an_origin_are_reused_under_load() -> None:
    async with origin() as server, Outbound(DEFAULT_POLICY, max_connections=20) as outbound:
        requests = iter(range(200))

        async def lane() -> None:
            for _ in requests:
                assert (await get(outbound, server.base + "/echo"))[0] == 200

        await asyncio.gather(*(lane() for _ in range(20)))
    assert len(server.requests) == 200
    assert server.connections <= 20  # one per slot at most, not one per request


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)  # the name only, no IP in the cert
    return context


async def test_an_https_origin_with_an_untrusted_certificate_is_refused(ca: trustme.CA) -> None:
    async with origin(tls=server_tls(ca), host="localhost") as server, \
            Outbound(DEFAULT_POLICY) as outbound:
        with pytest.raises(ToolFailure) as refused:
            await get(outbound, server.base + "/x")
    assert refused.value.code == "http_tls_error"
    assert "CHATFLOW_HTTP_CA_FILE" in refused.value.message
    assert server.requests == []


async def test_an_https_origin_is_verified_by_name_with_the_configured_ca(
        ca: trustme.CA, tmp_path: object) -> None:
    bundle = f"{tmp_path}/ca.pem"
    ca.cert_pem.write_to_path(bundle)
    async with origin(tls=server_tls(ca), host="localhost") as server, \
            Outbound(DEFAULT_POLICY, tls=default_tls(bundle)) as outbound:
        status, body, _ = await get(outbound, server.base + "/x")
        # The same certificate does not name 127.0.0.1: verification is by name, not address.
        with pytest.raises(ToolFailure) as by_address:
            await get(outbound, server.base.replace("localhost", "127.0.0.1") + "/x")
    assert (status, body) == (200, b'{"ok": true}')
    assert by_address.value.code == "http_tls_error"
    (head,) = server.requests
    assert b"\r\nHost: localhost:" in head


async def test_a_cookie_set_by_one_response_is_never_sent_with_the_next_request() -> None:
    async with origin() as server, Outbound(DEFAULT_POLICY) as outbound:
        await get(outbound, server.base + "/login")
        await get(outbound, server.base + "/other")
    assert all(b"cookie" not in head.lower().replace(b"set-cookie", b"") for head in
               server.requests)


async def test_a_body_cap_stops_reading_an_endless_stream() -> None:
    async with origin(endless) as server, \
            Outbound(DEFAULT_POLICY, max_body_bytes=256 * 1024) as outbound:
        with pytest.raises(ToolFailure) as capped:
            await get(outbound, server.base + "/stream")
    assert capped.value.code == "http_response_too_large"
    assert "262144 bytes" in capped.value.message


async def test_a_declared_length_over_the_cap_fails_before_the_body_is_read() -> None:
    async def huge(_head: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n")

    async with origin(huge) as server, Outbound(DEFAULT_POLICY) as outbound:
        with pytest.raises(ToolFailure) as capped:
            await get(outbound, server.base + "/huge", max_bytes=1000)
    assert capped.value.code == "http_response_too_large"
