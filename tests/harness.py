"""A test harness: workers, a client, tool publishing and result waiting."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import msgspec

from chatflow.handlers.dataplane.worker import Worker
from chatflow.handlers.interfaces.client import execute, last_id, publish, trace, wait_results
from chatflow.handlers.keys import Keys
from chatflow.handlers.redis_client import make_client
from chatflow.handlers.settings import Settings
from chatflow.runtime.state import LogEntry
from chatflow.schemas.wire import ExecuteToolCommand, ToolResult

FAST = {
    "block_ms": 200,
    "claim_interval_ms": 100,
    "reaper_interval_ms": 50,
    "claim_idle_ms": 500,
}


class Harness:
    def __init__(self, url: str, prefix: str, **overrides: Any) -> None:
        self.url = url
        self.settings = Settings(redis_url=url, prefix=prefix, **{**FAST, **overrides})
        self.keys = Keys(self.settings.prefix, self.settings.partitions)
        self.client = make_client(url, cluster=self.settings.redis_cluster)
        self.workers: list[Worker] = []

    async def start_worker(self, **overrides: Any) -> Worker:
        settings = self.settings.model_copy(update=overrides)
        worker = Worker(settings, self.url)
        await worker.start()
        self.workers.append(worker)
        return worker

    async def stop_workers(self) -> None:
        for worker in self.workers:
            await worker.stop()
        self.workers.clear()

    async def close(self) -> None:
        await self.stop_workers()
        await self.client.aclose()

    async def put_tool(self, pt: str, definition: dict[str, Any], tool_id: str | None = None,
                       name: str = "") -> None:
        record = {"id": pt, "toolId": tool_id or f"t-{pt}", "name": name, "definition": definition}
        await self.client.set(self.keys.tool(pt), json.dumps(record))

    def command(self, pt: str, *, inputs: dict[str, str] | None = None,
                variables: dict[str, Any] | None = None, command_id: str | None = None,
                debug: bool = False, contact: str = "5511999990000", **action: Any) -> ExecuteToolCommand:
        data = {
            "commandId": command_id or f"cmd-{uuid.uuid4().hex[:12]}",
            "action": {"id": "act-1", "type": "executeTool", "toolId": f"t-{pt}",
                       "publishedToolId": pt, "outputVariable": "out",
                       "inputVariables": [{"name": k, "value": v}
                                          for k, v in (inputs or {}).items()], **action},
            "context": {"contactId": contact, "variables": variables or {},
                        "router": {"id": "r-1"}, "flow": {"id": "f-1"}, "debug": debug},
        }
        return msgspec.convert(data, ExecuteToolCommand)

    async def run(self, pt: str, timeout_s: float = 30.0, **kw: Any) -> ToolResult:
        return await execute(self.client, self.keys, self.command(pt, **kw), timeout_s=timeout_s)

    async def run_command(self, command: ExecuteToolCommand, timeout_s: float = 30.0) -> ToolResult:
        return await execute(self.client, self.keys, command, timeout_s=timeout_s)

    async def publish_raw(self, fields: dict[str, Any]) -> bytes:
        entry_id: bytes = await self.client.xadd(self.keys.commands, fields)
        return entry_id

    async def results_after(self, after: bytes, command_ids: set[str],
                            timeout_s: float = 30.0, stream: str | None = None
                            ) -> dict[str, list[ToolResult]]:
        return await wait_results(self.client, stream or self.keys.results, command_ids,
                                  after=after, timeout_s=timeout_s)

    async def mark(self, stream: str | None = None) -> bytes:
        return await last_id(self.client, stream or self.keys.results)

    async def send(self, command: ExecuteToolCommand) -> None:
        await publish(self.client, self.keys, command)

    async def drained(self, stream: str, group: str, timeout_s: float = 30.0) -> None:
        """Wait until ``group`` has read and acked everything on ``stream``."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            info = {g["name"].decode(): g for g in await self.client.xinfo_groups(stream)}
            g = info.get(group)
            if g is not None and g["pending"] == 0 and g.get("lag") == 0:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"{group} on {stream} not drained: {g}")
            await asyncio.sleep(0.02)  # polling a condition on the server, bounded above

    async def trace(self, exec_id: str) -> list[LogEntry]:
        return await trace(self.client, self.keys, exec_id)

    async def stream(self, name: str) -> list[dict[str, Any]]:
        return [json.loads(f[b"data"]) for _id, f in await self.client.xrange(name)]
