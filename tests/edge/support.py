"""Builders for the edge tests: an integration server's cache record, a callEndpoint tool,
a tool of a given workspace, and an upstream that counts what is in flight."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from tests.core.tools import ret, to, tool
from tests.harness import Harness
from tests.support.http import Reply, Request, json_reply


async def put_server(h: Harness, server_id: str, base: str, path: str = "/call",
                     method: str = "GET", **extensions: Any) -> None:
    """``integration:server:{id}`` as the registry writes it, with one endpoint ``e``."""
    record = {"id": server_id, "workspace": "default", "name": server_id, "baseUrl": base,
              "headers": {}, "secretHeaders": {}, **extensions,
              "endpoints": {"e": {"id": "e", "name": "e", "path": path, "method": method,
                                  "headers": {}, "secretHeaders": {}, "bodyTemplate": None,
                                  "params": []}}}
    await h.client.set(h.keys.server(server_id), json.dumps(record))


def endpoint_tool(server_id: str, **block: Any) -> dict[str, Any]:
    """callEndpoint ``e`` of ``server_id``, then return its status (or its error)."""
    call = {"type": "callEndpoint", "id": "c", "serverId": server_id, "endpointId": "e",
            "responseStatusVariable": "st", "onError": "blocking", "outputConditions": [],
            "defaultOutput": to("r"), **block}
    return tool("c", call, ret("r", "{{st}}"))


async def put_tool_in(h: Harness, pt: str, definition: dict[str, Any], workspace: str) -> None:
    record = {"id": pt, "toolId": f"t-{pt}", "name": pt, "workspace": workspace,
              "definition": definition}
    await h.client.set(h.keys.tool(pt), json.dumps(record))


class Counting:
    """Answers 200 after ``hold_s``; keeps the arrival times, the most requests ever in
    flight at once, and the path of each."""

    def __init__(self, hold_s: float = 0.0, status: int = 200) -> None:
        self.hold_s = hold_s
        self.status = status
        self.lock = threading.Lock()
        self.times: list[float] = []
        self.paths: list[str] = []
        self.in_flight = 0
        self.most = 0

    def __call__(self, request: Request) -> Reply:
        with self.lock:
            self.times.append(time.monotonic())
            self.paths.append(request.path)
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            if self.hold_s:
                time.sleep(self.hold_s)  # the upstream is slow: the calls overlap
            return json_reply({"ok": self.status < 400}, self.status)
        finally:
            with self.lock:
                self.in_flight -= 1
