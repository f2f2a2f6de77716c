"""``/tools``: the tool registry, the builder's test runs, and AI agent links."""

from __future__ import annotations

import json
from typing import Annotated, Any

import structlog
from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from chatflow.runtime.registry import workspace_of
from chatflow.schemas.definition import PublishedTool

from ..projections.metrics import tool_metrics
from ..registry.errors import ApiCode, Invalid
from ..registry.gate import publish_gated
from ..registry.inline import single_block_definition
from ..registry.models import PublishIn, ToolCreate, ToolPatch
from ..registry.tools import get_tool
from .auth import Caller, Writer
from .authorization import Authorized, problems_of, refuse_unresolved
from .contract import answers
from .deps import Services, services

log = structlog.get_logger("chatflow.api")
router = APIRouter(tags=["tools"])
Svc = Annotated[Services, Depends(services)]
LIST_FIELDS = ("definition", "publishedTool")


class TestFlow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    toolId: str | None = None
    definition: dict[str, Any] | None = None
    startBlockId: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    variables: dict[str, Any] = Field(default_factory=dict)
    # The contact the run is made for (and kept under in the run history); "inline" when absent.
    contactId: str | None = Field(None, min_length=1, max_length=256)


class TestBlock(BaseModel):
    model_config = ConfigDict(extra="forbid")
    block: dict[str, Any]
    variables: dict[str, Any] = Field(default_factory=dict)


async def _views(svc: Services, workspace: str) -> list[dict[str, Any]]:
    await svc.registry.catch_up()
    raw = await svc.client.hgetall(svc.keys.registry_view("tools"))
    views = [v for v in map(json.loads, raw.values()) if workspace_of(v) == workspace]
    return sorted(views, key=lambda v: (v.get("createdAt") or "", v["id"]))


@router.get("/tools/native", summary="List native tools (kind=native)")
async def list_native(svc: Svc, who: Caller) -> list[dict[str, Any]]:
    return [{k: v for k, v in t.items() if k not in LIST_FIELDS}
            for t in await _views(svc, who.workspace) if t["kind"] == "native" and not t.get("deletedAt")]


@router.get("/tools", summary="List custom tools with status, metrics and AI flags")
async def list_tools(svc: Svc, who: Caller,
                     includeDeleted: bool = Query(False)) -> list[dict[str, Any]]:
    tools = [t for t in await _views(svc, who.workspace) if t["kind"] == "custom"
             and (includeDeleted or not t.get("deletedAt"))]
    metrics = await tool_metrics(svc.client, svc.keys, [t["id"] for t in tools])
    return [{**{k: v for k, v in t.items() if k not in LIST_FIELDS}, "metrics": metrics[t["id"]]}
            for t in tools]


@router.post("/tools", responses=answers(409), status_code=201, summary="Create a tool (empty unless given)")
async def create_tool(svc: Svc, grant: Authorized,
                      body: Annotated[ToolCreate | None, Body()] = None) -> dict[str, Any]:
    return await svc.tools.create(body or ToolCreate(), scope=grant.scope)


@router.post("/tools/test-flow", responses=answers(404, 429),
             summary="Run a tool from a chosen block; returns the trace")
async def test_flow(svc: Svc, grant: Authorized, body: TestFlow) -> dict[str, Any]:
    definition = body.definition
    tool_id = body.toolId or "test"
    name = ""
    await svc.registry.catch_up()
    if definition is None:
        if not body.toolId:
            raise Invalid("give a toolId or a definition")
        tool = get_tool(svc.registry.state, body.toolId, workspace=grant.workspace)
        definition, name = tool.get("definition"), tool.get("name", "")
    data = dict(definition or {})
    if body.startBlockId:
        data["onboardingBlockId"] = body.startBlockId
    parsed = refuse_unresolved(svc, grant, data)
    published = PublishedTool(id=f"test-{tool_id}", toolId=tool_id, name=name, definition=parsed)
    async with svc.held.hold(grant.actor, grant.workspace):
        run = await svc.inline.run(published, grant=grant, inputs=body.inputs,
                                   variables=body.variables, contact=body.contactId or "inline")
    out = run.body()
    out["inHistory"] = await _keep_test_run(svc, grant.workspace, body.toolId, run)
    return out


async def _keep_test_run(svc: Services, workspace: str, tool_id: str | None, run: Any) -> bool:
    """Write a test run of a tool of this workspace into the run history, so the test panel
    can link to its run page. An ad hoc definition (no toolId) belongs to no tool, so to no
    workspace a run page could be shown in: it is not kept. A history that cannot write
    costs the link, never the test run's answer."""
    from sqlalchemy.exc import SQLAlchemyError

    from ..history.builder_runs import record_test_run

    tool = svc.registry.state.tools.get(tool_id) if tool_id else None
    if svc.history is None or tool is None or workspace_of(tool) != workspace:
        return False
    try:
        secrets = await svc.secrets.of(workspace)
        return await record_test_run(svc.history, run.executions, run.trace, run.definition,
                                     secrets)
    except (SQLAlchemyError, OSError) as exc:
        log.warning("a test run was not kept in the run history", error=exc.__class__.__name__,
                    tool_id=tool_id)
        return False


@router.post("/tools/test-block", responses=answers(429),
             summary="Run one block alone (the builder's test panel)")
async def test_block(svc: Svc, grant: Authorized, body: TestBlock) -> dict[str, Any]:
    data = single_block_definition(body.block)
    await svc.registry.catch_up()
    parsed, problems = problems_of(svc, grant, data)
    if parsed is None or problems:
        prefix = f"definition.blocks.{data['onboardingBlockId']}."
        raise Invalid("the block cannot run", code=ApiCode.INVALID_BLOCK,
                      problems=[p.replace(prefix, "block.", 1) for p in problems])
    published = PublishedTool(id="test-block", toolId="test-block", definition=parsed)
    async with svc.held.hold(grant.actor, grant.workspace):
        run = await svc.inline.run(published, grant=grant, inputs={}, variables=body.variables)
    return run.body()


@router.get("/tools/{tool_id}", responses=answers(404),
            summary="A tool and its published version (404 in the trash)")
async def get_one(svc: Svc, who: Caller, tool_id: str) -> dict[str, Any]:
    return await svc.tools.view(tool_id, scope=who.scope)


@router.patch("/tools/{tool_id}", responses=answers(404, 409),
              summary="Save a draft (name, description, definition)")
async def save_tool(svc: Svc, grant: Authorized, tool_id: str, body: ToolPatch) -> dict[str, Any]:
    return await svc.tools.save(tool_id, body, scope=grant.scope)


@router.delete("/tools/{tool_id}", responses=answers(404, 409), summary="Move a tool to the trash")
async def trash_tool(svc: Svc, who: Writer, tool_id: str) -> dict[str, Any]:
    return await svc.tools.trash(tool_id, scope=who.scope)


@router.post("/tools/{tool_id}/restore", responses=answers(404, 409), summary="Restore a tool from the trash")
async def restore_tool(svc: Svc, who: Writer, tool_id: str) -> dict[str, Any]:
    return await svc.tools.restore(tool_id, scope=who.scope)


@router.delete("/tools/{tool_id}/permanent", responses=answers(404, 409),
               summary="Delete for good (only from the trash)")
async def purge_tool(svc: Svc, who: Writer, tool_id: str) -> dict[str, Any]:
    return await svc.tools.purge(tool_id, scope=who.scope)


@router.post("/tools/{tool_id}/publish", responses=answers(404, 409, 429),
             summary="Publish the draft as the next version, if its saved test cases pass")
async def publish_tool(svc: Svc, grant: Authorized, tool_id: str,
                       body: Annotated[PublishIn | None, Body()] = None) -> dict[str, Any]:
    """409 ``tests_failed`` lists the failing cases; ``force: true`` publishes anyway and
    keeps them, with the ``note``, in the version."""
    body = body or PublishIn()
    async with await svc.gate_held(grant.actor, grant.workspace, tool_id):
        return await publish_gated(svc.tools, svc.case_runner, tool_id, version=body.version,
                                   note=body.note, force=body.force, scope=grant.scope)


@router.get("/ai-agents/{agent_id}", tags=["agents"], summary="An agent's cached tools")
async def get_agent(svc: Svc, who: Caller, agent_id: str) -> dict[str, Any]:
    return await svc.tools.agent(agent_id, scope=who.scope)


@router.put("/ai-agents/{agent_id}/tools/{tool_id}", responses=answers(404, 409), tags=["agents"],
            summary="Link a tool to an agent (AiAgentTool)")
async def link_tool(svc: Svc, who: Writer, agent_id: str, tool_id: str) -> dict[str, Any]:
    return await svc.tools.link(agent_id, tool_id, scope=who.scope)


@router.delete("/ai-agents/{agent_id}/tools/{tool_id}", responses=answers(404, 409), tags=["agents"],
               summary="Unlink a tool from an agent")
async def unlink_tool(svc: Svc, who: Writer, agent_id: str, tool_id: str) -> dict[str, Any]:
    return await svc.tools.link(agent_id, tool_id, linked=False, scope=who.scope)
