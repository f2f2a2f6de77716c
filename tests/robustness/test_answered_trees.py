"""An answered tree makes no further calls: a block with side effects queued before the tree
was cancelled never reaches its server."""

from __future__ import annotations

import json

from chatflow.handlers.cli.cancel_cmd import cancel_execution
from chatflow.handlers.keys import COMMANDS_GROUP, STEPS_GROUP
from chatflow.handlers.worker import Worker, ensure_groups
from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer


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
