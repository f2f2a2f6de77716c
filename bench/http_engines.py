"""Outbound HTTP engines side by side, on an http-3-like loop, measured in one run.

    python -m bench.http_engines [--requests 3000] [--concurrency 50] [--rounds 3]

Many concurrent GETs, each through the egress checks Outbound makes (host checked, name
resolved, every address checked, the connection made to a checked address), against a
keep-alive origin run as its own process (its CPU is not counted: it stands for the outside
world), over HTTP and over HTTPS (a local CA made by ``trustme``). For each engine it prints
requests/s and client CPU per request, and both as ratios to the first engine (httpx, what
Outbound used before), measured in the same round. The machine may be shared: run several
rounds and read the ratios, not the absolute figures.

Engines: ``httpx`` (AsyncClient, the checked address put in the URL, SNI kept by name);
``httpx+aiohttp`` (the same client over the ``httpx-aiohttp`` transport); ``aiohttp`` (a
ClientSession whose resolver hands back the checked addresses); ``outbound`` (the project's
``Outbound``, whatever engine it uses now, with its gate and capped read).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import trustme

try:  # only this bench uses it: pip install httpx-aiohttp to compare it
    from httpx_aiohttp import AiohttpTransport
except ImportError:  # pragma: no cover
    AiohttpTransport = None

from chatflow.runtime import egress
from chatflow.runtime.outbound import Outbound, resolve

POLICY = egress.DEFAULT_POLICY
Get = Callable[[str], Awaitable[bytes]]


async def _checked(url: httpx.URL) -> list[egress.IPAddress]:
    """What Outbound does before it connects: check the host, resolve, check every address."""
    POLICY.check_host(url.host)
    addresses = await resolve(url.host, url.port or 443, 10.0)
    POLICY.check(url.host, addresses)
    return addresses


def httpx_engine(tls: ssl.SSLContext, transport: httpx.AsyncBaseTransport | None = None
                 ) -> tuple[Get, Callable[[], Awaitable[None]]]:
    client = httpx.AsyncClient(verify=tls, transport=transport, follow_redirects=False,
                               limits=httpx.Limits(max_connections=100,
                                                   max_keepalive_connections=20))

    async def get(url: str) -> bytes:
        target = httpx.URL(url)
        address = (await _checked(target))[0]
        request = client.build_request("GET", target.copy_with(host=str(address)), timeout=10.0)
        if target.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": target.host}
        response = await client.send(request, stream=True)
        try:
            return b"".join([chunk async for chunk in response.aiter_bytes()])
        finally:
            await response.aclose()

    return get, client.aclose


class _CheckedResolver(aiohttp.abc.AbstractResolver):
    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[Any]:
        addresses = await _checked(httpx.URL(f"http://{host}:{port}/"))
        return [{"hostname": host, "host": str(a), "port": port, "family": socket.AF_INET
                 if a.version == 4 else socket.AF_INET6, "proto": 0,
                 "flags": socket.AI_NUMERICHOST} for a in addresses]

    async def close(self) -> None:
        return None


def aiohttp_engine(tls: ssl.SSLContext) -> tuple[Get, Callable[[], Awaitable[None]]]:
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=100, ssl=tls, resolver=_CheckedResolver(),
                                       use_dns_cache=False),
        cookie_jar=aiohttp.DummyCookieJar())

    async def get(url: str) -> bytes:
        POLICY.check_host(httpx.URL(url).host)
        async with session.get(url, allow_redirects=False,
                               timeout=aiohttp.ClientTimeout(total=10.0)) as response:
            return await response.read()

    return get, session.close


def outbound_engine(tls: ssl.SSLContext) -> tuple[Get, Callable[[], Awaitable[None]]]:
    outbound = Outbound(POLICY, max_connections=100, tls=tls)

    async def get(url: str) -> bytes:
        _status, body, _type = await outbound.send("GET", url, headers={}, content=None,
                                                   timeout_s=10.0)
        return body

    return get, outbound.aclose


ENGINES: dict[str, Callable[[ssl.SSLContext], tuple[Get, Callable[[], Awaitable[None]]]]] = {
    "httpx": httpx_engine,
    **({"httpx+aiohttp": lambda tls: httpx_engine(tls, AiohttpTransport(verify=tls))}
       if AiohttpTransport is not None else {}),
    "aiohttp": aiohttp_engine,
    "outbound": outbound_engine,
}


async def run_engine(name: str, tls: ssl.SSLContext, base: str, requests: int,
                     concurrency: int) -> tuple[float, float]:
    """(requests/s, CPU µs per request) of one engine over ``requests`` GETs."""
    get, close = ENGINES[name](tls)
    try:
        await asyncio.gather(*(get(f"{base}/echo?n=w{i}") for i in range(concurrency)))  # warm
        left = iter(range(requests))

        async def lane() -> None:
            for i in left:
                body = await get(f"{base}/echo?n={i}")
                assert json.loads(body) == {"n": str(i)}, body

        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(lane() for _ in range(concurrency)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        await close()
    return requests / wall, cpu / requests * 1e6


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_origin(cert: Path | None, key: Path | None) -> tuple[subprocess.Popen[str], int]:
    port = _free_port()
    args = [sys.executable, "-m", "bench.http_engines", "--serve", str(port)]
    if cert and key:
        args += ["--cert", str(cert), "--key", str(key)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
    return proc, port


async def serve(port: int, cert: str | None, key: str | None) -> None:
    from bench.echo_server import _serve

    context = None
    if cert and key:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
    server = await asyncio.start_server(_serve, "127.0.0.1", port, ssl=context)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cert", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.cert, args.key))
        return
    engines = [e for e in args.engines.split(",") if e in ENGINES]
    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    tls = ssl.create_default_context()
    ca.configure_trust(tls)
    with tempfile.TemporaryDirectory() as folder:
        cert, key = Path(folder, "cert.pem"), Path(folder, "key.pem")
        leaf.private_key_and_cert_chain_pem.write_to_path(str(cert))
        leaf.private_key_pem.write_to_path(str(key))
        origins = {"http": start_origin(None, None), "https": start_origin(cert, key)}
        try:
            for scheme, (_proc, port) in origins.items():
                base = f"{scheme}://localhost:{port}"
                ratios: dict[str, list[tuple[float, float]]] = {e: [] for e in engines}
                print(f"\n{scheme}: {args.requests} GETs, concurrency {args.concurrency}")
                for round_ in range(1, args.rounds + 1):
                    figures = {e: asyncio.run(run_engine(e, tls, base, args.requests,
                                                         args.concurrency)) for e in engines}
                    rps0, cpu0 = figures[engines[0]]
                    for e, (rps, cpu) in figures.items():
                        ratios[e].append((rps / rps0, cpu / cpu0))
                        print(f"  round {round_} {e:14} {rps:8.0f} req/s ({rps / rps0:4.2f}×)"
                              f"  {cpu:7.0f} µs CPU/req ({cpu / cpu0:4.2f}×)")
                print(f"  median ratios to {engines[0]} over {args.rounds} rounds:")
                for e, values in ratios.items():
                    print(f"    {e:14} req/s {statistics.median(v[0] for v in values):4.2f}×"
                          f"  CPU/req {statistics.median(v[1] for v in values):4.2f}×")
        finally:
            for proc, _port in origins.values():
                proc.terminate()
                proc.wait(timeout=10)


if __name__ == "__main__":
    main()
