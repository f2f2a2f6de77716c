"""``GET /executions`` and ``GET /executions/{id}/events``: what ``chatflow executions`` and
``chatflow replay`` read, for the Studio, confined to the caller's workspace (a tree belongs
to the workspace of its root tool; another workspace's reads as missing)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Depends

from ..registry.errors import NotFound
from ..studio import scope
from .auth import Caller
from .deps import Services, services

router = APIRouter(tags=["executions"])
Svc = Annotated[Services, Depends(services)]


@router.get("/executions",
            summary="The executions in flight: tool, active block, depth, age, deadline")
async def list_executions(svc: Svc, who: Caller) -> list[dict[str, Any]]:
    # Imported here: chatflow.handlers.cli imports this package (``chatflow api``).
    from ..cli.executions_cmd import in_flight

    mine = await scope.workspace_tools(svc.registry, who.workspace)
    # ``tool`` is the publishedToolId that ran; a command's toolId is only its caller's label.
    return [asdict(row) for row in await in_flight(svc.client, svc.keys) if row.tool in mine]


@router.get("/executions/{execution_id}/events",
            summary="An execution's event log with its children's, replayed and checked")
async def execution_events(svc: Svc, who: Caller, execution_id: str) -> dict[str, Any]:
    from ..cli.replay_cmd import replay_execution

    try:
        report = await replay_execution(svc.client, svc.keys, execution_id)
    except ValueError as exc:  # an id that names no partition
        raise NotFound(f"no execution {execution_id!r}", code="execution_not_found") from exc
    mine = await scope.workspace_tools(svc.registry, who.workspace)
    started = next((e for e in report.trace if e.type == "started"), None)
    if started is not None and (started.detail or {}).get("publishedToolId") not in mine:
        report.trace.clear()  # another workspace's execution reads exactly like a missing one
    if not report.trace:
        raise NotFound(f"no event log for execution {execution_id!r} (expired after "
                       "CHATFLOW_STATE_TTL_S, or never existed)", code="execution_not_found")
    return {"executionId": execution_id, "events": msgspec.to_builtins(report.trace),
            "replay": {"executions": report.executions, "transitions": report.transitions,
                       "firstDifference": None if report.first is None else str(report.first)}}
