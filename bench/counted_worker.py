"""A `chatflow worker` that counts its round trips to Valkey, for the benchmark only.

    python -m bench.counted_worker COUNT_FILE               # a chatflow worker
    python -m bench.counted_worker COUNT_FILE baseline ARGS  # bench.baseline's bare loop

A round trip is one packed write on a redis-py connection followed by its replies: a
single command, a pipeline (whatever its length) and a blocking read are one each. The
count is every connection's of this process (FastStream's subscribers, the store, the
recovery loops), patched in at the class so nothing in the product changes. A thread
writes the running total to COUNT_FILE every 100 ms and at exit, so the benchmark reads
it between phases (idle, load) without talking to the worker.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any

from redis.asyncio.connection import AbstractConnection

_count = 0


def _patch() -> None:
    original = AbstractConnection.send_packed_command

    async def counted(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        global _count
        _count += 1  # the event loop's thread only: no lock needed
        await original(self, command, check_health)

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]


def _writer(path: str, stop: threading.Event) -> None:
    def write() -> None:
        tmp = f"{path}.tmp"
        with open(tmp, "w") as fh:
            fh.write(str(_count))
        os.replace(tmp, path)  # the reader never sees a half-written number

    atexit.register(write)
    while not stop.wait(0.1):
        write()


def main() -> None:
    path = sys.argv[1]
    _patch()
    stop = threading.Event()
    threading.Thread(target=_writer, args=(path, stop), daemon=True).start()
    try:
        if sys.argv[2:3] == ["baseline"]:
            import asyncio

            from bench.baseline import loop

            url, prefix, consumer, batch = sys.argv[3:7]
            asyncio.run(loop(url, prefix, consumer, int(batch)))
        else:
            from chatflow.handlers.cli import main as cli

            cli(["worker"])
    finally:
        stop.set()


if __name__ == "__main__":
    main()
