"""A raw keep-alive HTTP/1.1 origin on loopback (asyncio streams, optionally TLS) for what
uvicorn hides: how many TCP connections were accepted, each request's head as sent, and replies
a well-behaved app cannot make (a body that never ends)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

Reply = Callable[[bytes, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Origin:
    """A raw keep-alive HTTP/1.1 server on loopback that counts what it sees."""

    base: str = ""
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)  # each request's head
    written: int = 0  # body bytes written by streaming replies


async def json_ok(_head: bytes, writer: asyncio.StreamWriter) -> None:
    body = b'{"ok": true}'
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Set-Cookie: session=abc; Path=/\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(body), body))


@asynccontextmanager
async def origin(reply: Reply = json_ok, tls: ssl.SSLContext | None = None,
                 host: str = "127.0.0.1") -> AsyncIterator[Origin]:
    seen = Origin()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                seen.requests.append(head)
                await reply(head, writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    seen.base = f"{'https' if tls else 'http'}://{host}:{port}"
    try:
        yield seen
    finally:
        server.close()
        await server.wait_closed()


async def endless(_head: bytes, writer: asyncio.StreamWriter) -> None:
    """A chunked body that never ends: a client that reads it all never returns."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n%s\r\n" % (64 * 1024, b"x" * 64 * 1024)
    while True:
        writer.write(chunk)
        await writer.drain()


