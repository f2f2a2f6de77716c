"""A small keep-alive HTTP/1.1 server for the benchmark's httpCall scenarios.

    python -m bench.echo_server PORT

``GET /echo?n=X`` answers ``{"n": "X"}``. ``POST /flaky?n=X`` answers the same, except that
the first request of one idempotency key in five (by the key's hash: 20% of first attempts)
answers 503; a repeat of a key always succeeds (the flaky-http scenario). ``GET /stats``
answers how many requests each path had. asyncio and raw streams, run as its own process so
its CPU is not the driver's or the workers' (the benchmark leaves it out of CPU per step:
it stands for the outside world).
"""

from __future__ import annotations

import asyncio
import json
import sys
import zlib
from collections import Counter
from urllib.parse import parse_qs, urlsplit

SEEN: set[str] = set()
COUNTS: Counter[str] = Counter()


def _reply(writer: asyncio.StreamWriter, status: bytes, body: bytes) -> None:
    writer.write(b"HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (status, len(body), body))


def _header(head: bytes, name: bytes) -> bytes:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return b""


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(_header(head, b"content-length") or 0)
            if length:
                await reader.readexactly(length)
            target = head.split(b" ", 2)[1]
            parts = urlsplit(target.decode("latin-1"))
            COUNTS[parts.path] += 1
            if parts.path == "/stats":
                _reply(writer, b"200 OK", json.dumps(COUNTS).encode())
            elif parts.path == "/flaky" and _first_of_five(_header(head, b"idempotency-key")):
                _reply(writer, b"503 Service Unavailable", b'{"error": "flaky"}')
            else:
                n = parse_qs(parts.query).get("n", ["0"])[0]
                _reply(writer, b"200 OK", json.dumps({"n": n}).encode())
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, IndexError, ValueError):
        pass
    finally:
        writer.close()


def _first_of_five(key: bytes) -> bool:
    """The first request of one key in five fails (a repeat of a key never does)."""
    text = key.decode("latin-1")
    if not text or text in SEEN:
        return False
    SEEN.add(text)
    return zlib.crc32(key) % 5 == 0


async def main(port: int) -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", port)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
