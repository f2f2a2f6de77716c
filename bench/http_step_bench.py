"""The httpCall step path in one process, for instruction counts: no worker process, no readers.

    python -m bench.http_step_bench [--executions 2000] [--batch 64] [--scenario http-2]

A real Valkey (embedded) and the loopback echo server (its own process) serve a worker's
components, driven by hand: commands are added, the intake starts them (each httpCall is a
step entry), and the step processor runs the step entries in batches of ``--batch`` (all the
batches of a round concurrently, as a worker's in-flight batches do), down to each result.
Scenarios: ``http-2`` (httpCall → return, no sandbox) and ``http-3`` (stream_bench's tool:
httpCall → script → return).

Under callgrind (``valgrind --tool=callgrind --callgrind-out-file=/dev/null python -m
bench.http_step_bench --executions N``), run N and 2N: the difference / N is this process's
instructions per execution, close to repeatable (the loop's polling varies a little).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from typing import Any

from bench.stream_bench import http_3, start_echo_server
from chatflow.handlers.dataplane.worker import Worker, ensure_groups
from chatflow.handlers.keys import COMMANDS_GROUP, STEPS_GROUP
from chatflow.handlers.operations.embedded import EmbeddedServer
from chatflow.handlers.settings import Settings


def http_2(base: str) -> dict[str, Any]:
    return {"id": "pt-http2", "toolId": "t-http2", "name": "http2", "definition": {
        "onboardingBlockId": "h", "blocks": {
            "h": {"type": "httpCall", "id": "h", "method": "GET", "url": base + "/echo?n={{n}}",
                  "responseBodyVariable": "resp", "onError": "blocking",
                  "outputConditions": [], "defaultOutput": {"type": "block", "blockId": "r"}},
            "r": {"type": "return", "id": "r", "value": "{{resp.n}}"}}}}


async def run(url: str, base: str, scenario: str, executions: int, batch: int) -> float:
    tool = http_2(base) if scenario == "http-2" else http_3(base)
    settings = Settings(redis_url=url, prefix=f"hb{uuid.uuid4().hex[:6]}:", metrics_port=0)
    worker = Worker(settings, url)
    keys, client = worker.keys, worker.client
    await ensure_groups(client, keys)
    await worker.store.load_scripts()
    await client.set(f"{keys.prefix}tool:{tool['id']}", json.dumps(tool))

    async def one_round(count: int) -> None:
        pipe = client.pipeline(transaction=False)
        for i in range(count):
            pipe.xadd(keys.commands, {"data": json.dumps({
                "commandId": f"c{uuid.uuid4().hex[:12]}",
                "action": {"id": "a", "toolId": tool["toolId"], "publishedToolId": tool["id"],
                           "outputVariable": "o", "inputVariables": [{"name": "n", "value": str(i)}]},
                "context": {"contactId": "bench"}})})
        await pipe.execute()
        reply = await client.xreadgroup(COMMANDS_GROUP, "bench", {keys.commands: ">"}, count=count)
        for _stream, entries in reply:
            await worker.intake.process(entries)
        streams = {keys.steps(n): ">" for n in range(keys.partitions)}
        while True:
            reply = await client.xreadgroup(STEPS_GROUP, "bench", streams, count=batch * 8)
            if not reply:
                break
            jobs = []
            for stream, entries in reply:
                n = int(stream.decode().split("{cf:")[1].split("}")[0])
                jobs += [worker.steps.process(n, entries[i:i + batch])
                         for i in range(0, len(entries), batch)]
            await asyncio.gather(*jobs)

    try:
        await one_round(50)  # warm up: definitions cached, connections open
        started = time.process_time()
        done = 0
        while done < executions:
            count = min(4 * batch, executions - done)
            await one_round(count)
            done += count
        cpu = time.process_time() - started
        results = await client.xlen(keys.results)
        if results != executions + 50:
            raise RuntimeError(f"{results} results for {executions + 50} commands")
        return cpu
    finally:
        await worker.http.aclose()
        await worker.sandbox.aclose()
        await client.aclose()
        await worker.read_client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--scenario", default="http-2", choices=["http-2", "http-3"])
    args = parser.parse_args()
    os.environ.setdefault("CHATFLOW_LOG_LEVEL", "warning")
    server = EmbeddedServer(password="").start()
    echo, base = start_echo_server()
    try:
        cpu = asyncio.run(run(server.url, base, args.scenario, args.executions, args.batch))
    finally:
        echo.terminate()
        echo.wait()
        server.stop()
    print(f"{args.scenario}: {cpu / args.executions * 1e6:.0f} µs CPU per execution "
          f"({args.executions} executions, batches of {args.batch})")


if __name__ == "__main__":
    main()
