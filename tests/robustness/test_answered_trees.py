"""An answered tree makes no further calls: a block with side effects queued before the tree
was cancelled never reaches its server."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable

from chatflow.handlers.cli.cancel_cmd import cancel_execution
from chatflow.handlers.dataplane.worker import Worker, ensure_groups
from chatflow.handlers.keys import COMMANDS_GROUP, STEPS_GROUP
from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer, Request, json_reply


async def test_a_cancelled_tree_never_sends_the_http_call_it_had_queued(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    http_server.route("POST", "/charge", {"charged": True})
    h = Harness(redis_url, prefix)
    worker = Worker(h.settings, redis_url)
    h.workers.append(worker)
    try:
        await ensure_groups(h.client, h.keys)
        await worker.store.load_scripts()
        await h.put_tool("pt-charge", tool(
            "h", http("h", http_server.base + "/charge", to("r"), method="POST"), ret("r", "ok")))
        command = h.command("pt-charge")
        after = await h.mark()
        await h.client.xadd(h.keys.commands, {"data": json.dumps(
            {"commandId": command.commandId, "action": {
                "id": "act-1", "type": "executeTool", "toolId": "t-pt-charge",
                "publishedToolId": "pt-charge"},
             "context": {"contactId": "c", "variables": {}}})})
        # The intake alone: the execution starts and its httpCall waits as a step entry.
        (_stream, entries), = await h.client.xreadgroup(COMMANDS_GROUP, "test",
                                                        {h.keys.commands: ">"})
        await worker.intake.process(entries)
        partition = h.keys.partition_of(command.commandId)
        (root_id,) = [r.decode() for r in await h.client.zrange(h.keys.deadlines(partition), 0, -1)]
        assert await h.client.xlen(h.keys.steps(partition)) == 1

        cancelled = await cancel_execution(h.client, h.keys, root_id, "test", h.settings)
        assert cancelled.cancelled
        await worker.start()  # now a worker reads the queued step
        await h.drained(h.keys.steps(partition), STEPS_GROUP)

        assert http_server.requests == []
        found = await h.results_after(after, {command.commandId})
        (result,) = found[command.commandId]
        assert result.error is not None and result.error.code == "execution_cancelled"
    finally:
        await h.close()


async def test_a_call_queued_for_the_only_connection_is_not_sent_once_its_tree_is_cancelled(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    held, release = threading.Event(), threading.Event()

    def hold(_request: Request) -> tuple[int, dict[str, str], bytes]:
        held.set()
        release.wait(30)
        return json_reply({"held": True})

    http_server.route("POST", "/hold", hold)
    http_server.route("POST", "/charge", {"charged": True})
    h = Harness(redis_url, prefix, http_max_connections=1)
    try:
        worker = await h.start_worker()
        for pt, path in (("pt-hold", "/hold"), ("pt-charge2", "/charge")):
            await h.put_tool(pt, tool("h", http("h", http_server.base + path, to("r"),
                                                method="POST"), ret("r", "ok")))
        after = await h.mark()
        first, second = h.command("pt-hold"), h.command("pt-charge2")
        await h.send(first)
        assert await asyncio.to_thread(held.wait, 30)  # the only connection slot is taken
        roots_before = await _roots(h, second.commandId)
        await h.send(second)
        # The second httpCall passed the step's answered check and waits for the slot.
        await _until(lambda: worker.http.queued == 1)
        (root_id,) = await _roots(h, second.commandId) - roots_before
        assert (await cancel_execution(h.client, h.keys, root_id, "test", h.settings)).cancelled
        release.set()
        found = await h.results_after(after, {first.commandId, second.commandId})

        assert [r.path for r in http_server.requests] == ["/hold"]  # /charge never arrived
        (cancelled,) = found[second.commandId]
        assert cancelled.error is not None and cancelled.error.code == "execution_cancelled"
        (done,) = found[first.commandId]
        assert done.error is None
    finally:
        release.set()
        await h.close()


async def _roots(h: Harness, command_id: str) -> set[str]:
    partition = h.keys.partition_of(command_id)
    return {r.decode() for r in await h.client.zrange(h.keys.deadlines(partition), 0, -1)}


async def _until(condition: Callable[[], bool], timeout_s: float = 30) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)  # polling in-process state, bounded by the timeout
