"""A small keep-alive HTTP/1.1 server for the benchmark's httpCall scenario.

    python -m bench.echo_server PORT

``GET /echo?n=X`` answers ``{"n": "X"}``. asyncio and raw streams, run as its own
process so its CPU is not the driver's or the workers' (the benchmark leaves it
out of CPU per step: it stands for the outside world).
"""

from __future__ import annotations

import asyncio
import json
import sys
from urllib.parse import parse_qs, urlsplit


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            target = head.split(b" ", 2)[1].decode("latin-1")
            n = parse_qs(urlsplit(target).query).get("n", ["0"])[0]
            body = json.dumps({"n": n}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, IndexError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", port)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
