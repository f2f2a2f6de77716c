"""Two workspaces of tools in a real registry, real workers, and MCP clients of both transports.

Workspace ``shop`` holds an AI tool whose description falls back to the tool's own (plus its
returnDescription), a failing AI tool, a published tool that is not for AI, an AI draft never
published, a trashed AI tool, and two native tools served by a worker plus one no worker
serves. Workspace ``other`` holds one AI tool of its own.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from chatflow.handlers.controlplane.apikeys import create_api_key
from chatflow.handlers.dataplane.native import load_native_tools
from chatflow.handlers.dataplane.worker import Worker
from chatflow.handlers.registry.crypto import SecretBox
from chatflow.handlers.registry.models import ToolCreate
from chatflow.handlers.registry.registry import Registry
from chatflow.handlers.registry.scope import Scope
from chatflow.handlers.registry.tools import ToolOps
from tests.harness import Harness

ORDER_STATUS = {
    "blocks": {"r": {"type": "return", "id": "r",
                     "value": "order {{orderId}}: shipped (express={{express}})"}},
    "onboardingBlockId": "r",
    "enabledForAI": True, "slug": "order_status", "returnDescription": "Returns the order's status.",
    "inputs": [
        {"name": "orderId", "type": "string", "description": "The order number.", "required": True},
        {"name": "express", "type": "boolean", "description": "Whether it ships express."},
    ],
}
TRACK_PARCEL = {
    "blocks": {
        "s": {"type": "executeScript", "id": "s", "outputVariable": "v", "onError": "blocking",
              "source": "throw new Error('carrier down for ' + input.code)",
              "inputVariables": [{"name": "code", "value": "{{code}}"}],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{v}}"},
    },
    "onboardingBlockId": "s",
    "enabledForAI": True, "slug": "track_parcel", "description": "Track a parcel with the carrier.",
    "inputs": [{"name": "code", "type": "string", "description": "The tracking code.", "required": True}],
}


def returning(value: str, **ai: Any) -> dict[str, Any]:
    return {"blocks": {"r": {"type": "return", "id": "r", "value": value}},
            "onboardingBlockId": "r", **ai}


SHOP_TOOLS = {"order_status", "track_parcel", "updateSentiment", "openTicket"}
STDIO_MAIN = "from chatflow.handlers.cli import main; raise SystemExit(main())"


@dataclass
class Runtime:
    harness: Harness
    ops: ToolOps
    tokens: dict[str, str] = field(default_factory=dict)  # "shop-editor" -> token
    key_ids: dict[str, str] = field(default_factory=dict)
    published: dict[str, str] = field(default_factory=dict)  # tool id -> publishedToolId

    async def tool(self, workspace: str, tool_id: str, definition: dict[str, Any] | None = None,
                   description: str | None = None, *, publish: bool = True,
                   native: str | None = None) -> None:
        scope = Scope(workspace, "test")
        body = (ToolCreate(id=tool_id, name=tool_id, description=description, kind="native",
                           nativeName=native) if native else
                ToolCreate(id=tool_id, name=tool_id, description=description, definition=definition))
        await self.ops.create(body, scope=scope)
        if publish and not native:
            view = await self.ops.publish(tool_id, scope=scope)
            self.published[tool_id] = str(view["publishedToolId"])

    async def key(self, workspace: str, role: str) -> str:
        key_id, token = await create_api_key(self.harness.client, self.harness.keys,
                                             workspace=workspace, role=role)
        self.tokens[f"{workspace}-{role}"] = token
        self.key_ids[f"{workspace}-{role}"] = key_id
        return token

    def stdio(self, workspace: str) -> StdioServerParameters:
        env = {"REDIS_URL": self.harness.url, "CHATFLOW_PREFIX": self.harness.keys.prefix,
               "CHATFLOW_LOG_LEVEL": "WARNING"}
        return StdioServerParameters(command=sys.executable,
                                     args=["-c", STDIO_MAIN, "mcp", "--workspace", workspace],
                                     env=env)


async def make_runtime(harness: Harness) -> Runtime:
    worker = Worker(harness.settings, harness.url,
                    native_tools=load_native_tools(["tests.bridge.native_tools"]))
    await worker.start()
    harness.workers.append(worker)
    registry = Registry(harness.client, harness.keys, SecretBox(None))
    await registry.start()
    rt = Runtime(harness, ToolOps(registry))
    await rt.tool("shop", "t-order", ORDER_STATUS, "Finds orders.")
    await rt.tool("shop", "t-track", TRACK_PARCEL, "General tracking text.")
    await rt.tool("shop", "t-plain", returning("plain"), "Not for agents.")
    await rt.tool("shop", "t-draft", returning("d", enabledForAI=True, slug="draft_only"),
                  "A draft.", publish=False)
    await rt.tool("shop", "t-trashed", returning("x", enabledForAI=True, slug="trashed_tool"),
                  "In the trash.")
    await rt.ops.trash("t-trashed", scope=Scope("shop", "test"))
    await rt.tool("shop", "n-sentiment", description="Registry text.", native="updateSentiment")
    await rt.tool("shop", "n-ticket", native="openTicket")
    await rt.tool("shop", "n-unserved", native="nobodyServesThis")
    await rt.tool("other", "t-other", returning("other's secret", enabledForAI=True,
                                               slug="other_tool", description="Not for shop."))
    for workspace, role in (("shop", "editor"), ("shop", "viewer"), ("other", "admin")):
        await rt.key(workspace, role)
    return rt


@asynccontextmanager
async def stdio_session(params: StdioServerParameters) -> AsyncIterator[ClientSession]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (create_mcp_http_client(headers=headers) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        yield session
