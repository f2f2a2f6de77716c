"""Worker process entry point: ``python -m runtime.sandbox._worker TIMEOUT_MS MAX_MEMORY``.

Reads request frames on stdin, runs them on one ThreadLane (a V8 context owned by its own
thread, which handles timeouts and memory kills itself) and writes response frames on the
original stdout. The parent starts it with an empty environment (see ``_process.py``). File descriptor 1
is pointed at stderr so nothing else can corrupt the protocol stream. If V8 aborts the
process (it does so on some oversized allocations), the parent sees EOF and recovers.
"""

from __future__ import annotations

import asyncio
import os
import sys

from ._engine import parked_engines
from ._lane import ThreadLane
from ._protocol import HEADER, decode_request, encode_response
from ._types import ScriptLimits


async def serve(limits: ScriptLimits, out_fd: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**31)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    lane = ThreadLane(limits)
    # Hello: the parent times each batch only from here, so a slow start (a loaded machine
    # importing Python and V8) is never mistaken for a hung script.
    hello = memoryview(encode_response(0, []))
    while hello:
        hello = hello[os.write(out_fd, hello) :]
    try:
        while True:
            try:
                header = await reader.readexactly(HEADER.size)
                body = await reader.readexactly(HEADER.unpack(header)[0])
            except asyncio.IncompleteReadError:
                return  # parent closed the pipe
            outcomes = await lane.execute(decode_request(body))
            retire = parked_engines() > 0  # a context spins on: let the parent replace us
            data = memoryview(encode_response(lane.contexts_created, outcomes, retire))
            while data:
                data = data[os.write(out_fd, data) :]
    finally:
        await lane.aclose()


def main(argv: list[str]) -> None:
    limits = ScriptLimits(timeout_ms=int(argv[1]), max_memory_bytes=int(argv[2]))
    out_fd = os.dup(1)
    os.dup2(2, 1)
    asyncio.run(serve(limits, out_fd))


if __name__ == "__main__":
    main(sys.argv)
