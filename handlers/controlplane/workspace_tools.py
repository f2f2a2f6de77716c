"""A workspace's tools as functions a client may call: what ``chatflow mcp`` serves.

A workspace exposes

* its published custom tools with ``enabledForAI`` (docs/agents.md, native and custom tools): the function
  spec is :func:`chatflow_agent.runtime_specs.custom_tool_spec`'s (slug, description with its
  fallback and ``returnDescription``, one parameter per ``ToolInput``), and a call is one
  executeTool command on the runtime's stream (:class:`~chatflow_agent.runtime_tools.RuntimeTool`);
* its native tools (``kind: "native"``) that a worker serves (``chatflow worker --tools``):
  the spec the worker wrote to ``native-tool:{nativeName}``, called through
  :class:`~chatflow_agent.runtime_tools.NativeToolProxy`.

The registry's view (``registry:view:tools``) says which tools belong to the workspace; it is
read afresh on every listing, so a tool published, trashed or moved meanwhile shows at once.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import structlog
from redis.exceptions import RedisError

from chatflow.runtime.registry.state import workspace_of
from chatflow_agent.errors import ToolExecutionError, ToolSchemaError
from chatflow_agent.runtime_specs import custom_tool_spec
from chatflow_agent.runtime_tools import NativeToolProxy, RuntimeConnection, RuntimeTool

from ..keys import Keys
from ..redis_client import Client, make_client


def store_of(connection: RuntimeConnection) -> tuple[Client, Keys]:
    """The handlers-side client and keys of ``connection``: the SDK's connection opens a
    client per call, while a server process keeps one for its whole life."""
    cached: tuple[Client, Keys] | None = getattr(connection, "_server_store", None)
    if cached is None:
        cached = (make_client(connection.url, cluster=connection.cluster),
                  Keys(connection.keys.prefix))
        connection._server_store = cached  # type: ignore[attr-defined]
    return cached

log = structlog.get_logger("chatflow.mcp")
Runnable = RuntimeTool | NativeToolProxy


@dataclass(frozen=True, slots=True)
class ExposedTool:
    """One function of the workspace: its name, description, JSON Schema and how to call it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    tool: Runnable


@dataclass(frozen=True, slots=True)
class Outcome:
    """A call's answer: the text a client reads, and whether it is an error."""

    text: str
    is_error: bool = False


def result_text(value: Any) -> str:
    """A tool's result as text: strings as they are, anything else as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class WorkspaceTools:
    """The tools of one workspace, read from the runtime's keys on every listing."""

    def __init__(self, connection: RuntimeConnection, workspace: str) -> None:
        self.connection = connection
        self.workspace = workspace

    async def _views(self) -> list[dict[str, Any]]:
        client, keys = store_of(self.connection)
        raw = await client.hgetall(keys.registry_view("tools"))
        views = [json.loads(value) for value in raw.values()]
        mine = [v for v in views if workspace_of(v) == self.workspace and not v.get("deletedAt")]
        return sorted(mine, key=lambda v: str(v.get("id")))

    async def _get_json(self, keys: list[str]) -> list[Any]:
        # One GET each rather than MGET: the keys may live in different cluster slots.
        client, _ = store_of(self.connection)
        values = await asyncio.gather(*(client.get(key) for key in keys))
        return [None if value is None else json.loads(value) for value in values]

    async def list(self) -> list[ExposedTool]:
        """The workspace's callable tools, in tool id order; a name taken twice keeps the first."""
        views = await self._views()
        customs = [v for v in views if v.get("kind", "custom") == "custom" and v.get("publishedToolId")]
        natives = [v for v in views if v.get("kind") == "native" and v.get("nativeName")]
        keys = self.connection.keys
        records = await self._get_json([keys.tool(v["publishedToolId"]) for v in customs])
        specs = await self._get_json([keys.native_tool(v["nativeName"]) for v in natives])
        found: dict[str, ExposedTool] = {}
        for view, record in zip(customs, records, strict=True):
            if record is not None and (record.get("definition") or {}).get("enabledForAI"):
                self._add(found, self._custom(view, record))
        for view, spec in zip(natives, specs, strict=True):
            if spec is None:
                log.debug("native tool not served by any worker; left out",
                         tool=view["id"], nativeName=view["nativeName"])
                continue
            self._add(found, self._native(view, spec))
        return list(found.values())

    def _custom(self, view: dict[str, Any], record: dict[str, Any]) -> ExposedTool | None:
        try:
            spec = custom_tool_spec(record, view.get("description"))
        except ToolSchemaError as exc:
            log.warning("published tool left out", tool=view["id"], error=str(exc))
            return None
        tool = RuntimeTool(spec, self.connection, published_tool_id=str(record["id"]),
                           tool_id=str(view["id"]))
        return ExposedTool(spec.name, spec.description, spec.to_openai_parameters(), tool)

    def _native(self, view: dict[str, Any], spec: dict[str, Any]) -> ExposedTool:
        # The worker's description comes from the function's docstring, written for a model;
        # the registry's is the list's, used only when the code has none.
        spec = {**spec, "description": spec.get("description") or view.get("description") or ""}
        proxy = NativeToolProxy(spec, self.connection)
        return ExposedTool(proxy.name, proxy.description, proxy.to_openai_parameters(), proxy)

    def _add(self, found: dict[str, ExposedTool], item: ExposedTool | None) -> None:
        if item is None:
            return
        if item.name in found:
            log.warning("two tools of the workspace share a name; the second is left out",
                        name=item.name, workspace=self.workspace)
            return
        found[item.name] = item

    async def call(self, name: str, arguments: dict[str, Any]) -> Outcome:
        """Run the tool ``name``; its failure (the runtime's error message) is an error outcome."""
        try:
            tools = {t.name: t for t in await self.list()}
        except RedisError as exc:
            return Outcome(f"the runtime cannot be reached: {exc}", is_error=True)
        found = tools.get(name)
        if found is None:
            return Outcome(f"no tool {name!r} in workspace {self.workspace!r}: it must be a "
                           "published custom tool with enabledForAI, or a native tool a worker "
                           "serves", is_error=True)
        try:
            kwargs = found.tool.bind_model_arguments(arguments, gemini=False)
            value = await found.tool.execute_async(**kwargs)
        except ToolExecutionError as exc:  # arguments refused, the tool failed, or it timed out
            return Outcome(str(exc), is_error=True)
        return Outcome(result_text(value))


__all__ = ["ExposedTool", "Outcome", "WorkspaceTools", "result_text"]
