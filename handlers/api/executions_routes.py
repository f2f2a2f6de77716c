"""``/executions``: executions in flight, seen and stopped from the HTTP API.

``POST /executions/{executionId}/cancel`` ends the execution's whole callTool tree
through ``chatflow.handlers.trees``, the same code as ``chatflow cancel`` and the
deadline reaper: the caller of the command gets exactly one ``execution_cancelled``
result, and the cancellation is counted where every process's ``/metrics`` sees it.
Editors and admins only; a tree whose root tool is another workspace's answers 404.

``GET /executions`` and ``GET /executions/{id}/events`` are what ``chatflow executions`` and
``chatflow replay`` read, for the Studio, confined to the caller's workspace the same way.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, ConfigDict, Field

from chatflow.runtime.state import ExecState

from ..registry.errors import Conflict, Invalid, NotFound
from ..studio import scope
from ..trees import cancel_execution
from .auth import Caller, Writer
from .deps import Services, services

router = APIRouter(tags=["executions"])
Svc = Annotated[Services, Depends(services)]


class CancelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(default="", max_length=500,
                        description="appended to the cancellation error the caller receives")


@router.post("/executions/{executionId}/cancel",
             summary="Cancel an execution in flight and its whole callTool tree")
async def cancel(executionId: str, svc: Svc, who: Writer,
                 body: Annotated[CancelRequest | None, Body()] = None) -> dict[str, Any]:
    await svc.registry.catch_up()
    owner = scope.owner_of_published(svc.registry)

    def ours(root: ExecState) -> bool:  # the tree belongs to the workspace of its root tool
        return owner(root.publishedToolId) == who.workspace

    outcome = await cancel_execution(svc.client, svc.keys, executionId,
                                     body.reason if body else "", svc.settings,
                                     via="POST /executions/{id}/cancel", visible=ours)
    if outcome.verdict == "invalid_id":
        raise Invalid(f"executionId {executionId!r}: {outcome.why}")
    if outcome.verdict == "not_found":
        raise NotFound(f"execution {executionId!r}: {outcome.why}")
    if outcome.verdict == "finished":
        raise Conflict(f"execution {executionId!r}: {outcome.why}")
    return {"executionId": outcome.executionId, "rootExecutionId": outcome.rootId,
            "activeExecutionId": outcome.leafId, "cancelled": True}


@router.get("/executions",
            summary="The executions in flight: tool, active block, depth, age, deadline")
async def list_executions(svc: Svc, who: Caller) -> list[dict[str, Any]]:
    # Imported here: chatflow.handlers.cli imports this package (``chatflow api``).
    from ..cli.executions_cmd import in_flight

    await svc.registry.catch_up()
    owner = scope.owner_of_published(svc.registry)
    # ``tool`` is the publishedToolId that ran; a command's toolId is only its caller's label.
    return [asdict(row) for row in await in_flight(svc.client, svc.keys)
            if owner(row.tool) == who.workspace]


@router.get("/executions/{execution_id}/events",
            summary="An execution's event log with its children's, replayed and checked")
async def execution_events(svc: Svc, who: Caller, execution_id: str) -> dict[str, Any]:
    from ..cli.replay_cmd import replay_execution

    try:
        report = await replay_execution(svc.client, svc.keys, execution_id)
    except ValueError as exc:  # an id that names no partition
        raise NotFound(f"no execution {execution_id!r}", code="execution_not_found") from exc
    await svc.registry.catch_up()
    started = next((e for e in report.trace if e.type == "started"), None)
    tool = (started.detail or {}).get("publishedToolId") if started is not None else None
    if started is not None and (not isinstance(tool, str)
                                or scope.owner_of_published(svc.registry)(tool) != who.workspace):
        report.trace.clear()  # another workspace's execution reads exactly like a missing one
    if not report.trace:
        raise NotFound(f"no event log for execution {execution_id!r} (expired after "
                       "CHATFLOW_STATE_TTL_S, or never existed)", code="execution_not_found")
    return {"executionId": execution_id, "events": msgspec.to_builtins(report.trace),
            "replay": {"executions": report.executions, "transitions": report.transitions,
                       "firstDifference": None if report.first is None else str(report.first)}}
