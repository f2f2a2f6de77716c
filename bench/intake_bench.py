"""The worker's read, intake, commit and projection path, in process, against a real Valkey.

    python -m bench.intake_bench [--executions 2000] [--batch 64]

Starts an embedded Valkey, publishes ``--executions`` bench-3 commands (packed once and
written in one go: the driver's own Python work stays small), then runs a worker's
readers for the commands stream and the execution-log projection, each batch processed
inline (no concurrency limit, leases or recovery), until every command is answered and
every execution event projected. Prints CPU µs per execution of this process.

Its use is instruction counts, which this VM's moving CPU speed does not blur: under
``valgrind --tool=callgrind --callgrind-out-file=/dev/null`` run it for N and 2N
executions; (I(2N) - I(N)) / N is the instructions per execution, start-up excluded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from typing import Any

import hiredis

from bench.stream_bench import BENCH_3, BENCH_CHILD
from chatflow.handlers.dataplane.worker import Worker, cancel_until_done, ensure_groups
from chatflow.handlers.keys import COMMANDS_GROUP, PROJECTION_GROUP
from chatflow.handlers.operations.embedded import EmbeddedServer
from chatflow.handlers.redis_client import Entry
from chatflow.handlers.settings import Settings


def command(cid: str) -> bytes:
    return json.dumps({"commandId": cid, "action": {
        "id": "a", "toolId": "t", "publishedToolId": "pt-bench", "outputVariable": "o",
        "inputVariables": [{"name": "n", "value": "7"}]}, "context": {"contactId": "bench"}}
    ).encode()


async def run(url: str, executions: int, batch: int, projection: bool = True) -> float:
    settings = Settings(redis_url=url, prefix=f"ib{uuid.uuid4().hex[:6]}:", batch_size=batch,
                        block_ms=200)
    worker = Worker(settings=settings, url=url)
    keys, client = worker.keys, worker.client
    await ensure_groups(client, keys)
    await worker.store.load_scripts()
    for tool in (BENCH_3, BENCH_CHILD):
        await client.set(keys.tool(tool["id"]), json.dumps(tool))
    packed = b"".join(hiredis.pack_command(("XADD", keys.commands, "*", "data", command(f"c{i}")))
                      for i in range(executions))
    conn = await client.connection_pool.get_connection()
    await conn.send_packed_command(packed)
    for _ in range(executions):
        await conn.read_response()
    await client.connection_pool.release(conn)

    done = {COMMANDS_GROUP: 0, **({PROJECTION_GROUP: 0} if projection else {})}
    finished = asyncio.Event()

    async def take(stream: str, group: str, process: Any, entries: list[Entry]) -> None:
        await process(entries)
        done[group] += len(entries)
        if all(n >= executions for n in done.values()):
            finished.set()

    readers = [r for r in worker.readers if r.group in done]
    for reader in readers:
        reader.take = take
    started = time.process_time()
    tasks = [asyncio.create_task(r.run()) for r in readers]
    await finished.wait()
    cpu = time.process_time() - started
    await cancel_until_done(tasks)  # a cancellation can be lost inside redis-py's read
    await worker.http.aclose()
    await client.aclose()
    await worker.read_client.aclose()
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--no-projection", action="store_true",
                        help="read the commands only (the execution log projection idle)")
    args = parser.parse_args()
    server = EmbeddedServer(password="").start()
    try:
        cpu = asyncio.run(run(server.url, args.executions, args.batch,
                                  not args.no_projection))
    finally:
        server.stop()
    print(f"{args.executions} executions: {cpu / args.executions * 1e6:.1f} µs CPU each")


if __name__ == "__main__":
    main()
