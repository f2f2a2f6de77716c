"""Worker process entry point: ``python -m runtime.sandbox._worker TIMEOUT_MS MAX_MEMORY``.

Reads request frames on stdin, runs them on one BatchExecutor (a V8 context that handles
timeouts and memory kills itself) and writes response frames on the original stdout. The
parent starts it with an empty environment (see ``_process.py``). File descriptor 1 is
pointed at stderr so nothing else can corrupt the protocol stream. If V8 aborts the process
(it does so on some oversized allocations), the parent sees EOF and recovers.

The loop is synchronous on the main thread, which creates, uses and frees the V8 context:
the parent sends one batch and waits for its answer, so there is nothing to overlap. A
blocking read plus a direct eval cost about half the CPU of the asyncio loop this replaced,
which handed each batch to a lane thread running a loop of its own (a task and a
cross-thread loop wake-up per hop and per eval answer).
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from ._engine import init_v8, parked_engines
from ._executor import BatchExecutor
from ._protocol import HEADER, decode_request, encode_response
from ._types import ScriptLimits


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_frame(stdin: BinaryIO) -> bytes | None:
    """One request body, or None once the parent has closed the pipe."""
    header = stdin.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    size = HEADER.unpack(header)[0]
    body = stdin.read(size)
    return body if len(body) == size else None


def serve(limits: ScriptLimits, stdin: BinaryIO, out_fd: int) -> None:
    init_v8()
    executor = BatchExecutor(limits)
    # Hello: the parent times each batch only from here, so a slow start (a loaded machine
    # importing Python and V8) is never mistaken for a hung script.
    _write_all(out_fd, encode_response(0, []))
    try:
        while (body := _read_frame(stdin)) is not None:
            outcomes = executor.execute(decode_request(body))
            retire = parked_engines() > 0  # a context spins on: let the parent replace us
            _write_all(out_fd, encode_response(executor.contexts_created, outcomes, retire))
    finally:
        executor.close()


def main(argv: list[str]) -> None:
    limits = ScriptLimits(timeout_ms=int(argv[1]), max_memory_bytes=int(argv[2]))
    out_fd = os.dup(1)
    os.dup2(2, 1)
    serve(limits, sys.stdin.buffer, out_fd)


if __name__ == "__main__":
    main(sys.argv)
