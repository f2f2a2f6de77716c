"""``POST /internal/tools/execute``: server-to-server, outside the public base path.

Requires ``x-internal-secret`` (``CHATFLOW_INTERNAL_SECRET``), compared in constant
time. The tool runs with empty variables: there is no session or contact here.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from chatflow.runtime.errors import ErrorCode, tool_not_found

from ..registry.errors import NotFound
from .authorization import authorize_internal, for_internal
from .contract import answers
from .deps import Services, services

router = APIRouter(tags=["internal"])
Svc = Annotated[Services, Depends(services)]


class InternalExecute(BaseModel):
    model_config = ConfigDict(extra="forbid")
    publishedToolId: str = Field(min_length=1)
    toolId: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)


@router.post("/internal/tools/execute", responses=answers(401, 404),
             summary="Run a published tool with empty variables",
             dependencies=[Depends(authorize_internal)])
async def execute(svc: Svc, body: InternalExecute) -> dict[str, Any]:
    raw = await svc.inline.store.get_tool(body.publishedToolId)
    parsed = svc.inline.definitions.parse(body.publishedToolId, raw)
    if raw is None:
        missing = tool_not_found(body.publishedToolId)  # the contract's row, as a run says it
        raise NotFound(missing.message, code=ErrorCode.TOOL_NOT_FOUND)
    published = parsed if not isinstance(parsed, tuple) else parsed[0]
    run = await svc.inline.run(published, grant=for_internal(published), inputs=body.inputs,
                               variables={})
    await svc.inline.record_executions(run)
    out = run.body()
    out.pop("variables", None)  # tool-local writes never leave the tool
    return out
