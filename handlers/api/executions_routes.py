"""``/executions``: executions in flight, seen and stopped from the HTTP API.

``POST /executions/{executionId}/cancel`` ends the execution's whole callTool tree
through ``chatflow.handlers.trees``, the same code as ``chatflow cancel`` and the
deadline reaper: the caller of the command gets exactly one ``execution_cancelled``
result, and the cancellation is counted where every process's ``/metrics`` sees it.
Editors and admins only; a tree whose root tool is another workspace's answers 404.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, ConfigDict, Field

from chatflow.runtime.registry import workspace_of
from chatflow.runtime.state import ExecState

from ..registry.errors import Conflict, Invalid, NotFound
from ..trees import cancel_execution
from .auth import Writer
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

    def ours(root: ExecState) -> bool:  # the tree belongs to the workspace of its root tool
        return workspace_of(svc.registry.state.tools.get(root.toolId)) == who.workspace

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
