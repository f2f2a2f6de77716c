"""``POST /internal/tools/execute``: server-to-server, outside the public base path.

Requires ``x-internal-secret`` (``CHATFLOW_INTERNAL_SECRET``), compared in constant
time. The tool runs with empty variables: there is no session or contact here (seed).
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from pydantic import BaseModel, ConfigDict, Field

from ..registry.errors import NotFound, Unauthorized
from .authorization import for_internal
from .deps import Services, services

router = APIRouter(tags=["internal"])
Svc = Annotated[Services, Depends(services)]


class InternalExecute(BaseModel):
    model_config = ConfigDict(extra="forbid")
    publishedToolId: str = Field(min_length=1)
    toolId: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)


def check_secret(expected: str | None, given: str | None) -> None:
    """Constant-time comparison (hmac.compare_digest); 401 when missing or wrong."""
    if not expected:
        raise Unauthorized("internal routes are disabled: CHATFLOW_INTERNAL_SECRET is not set",
                        code="internal_disabled")
    if given is None or not hmac.compare_digest(given.encode(), expected.encode()):
        raise Unauthorized("missing or wrong x-internal-secret header")


def require_secret(svc: Svc,
                   x_internal_secret: Annotated[str | None, Header()] = None) -> None:
    check_secret(svc.settings.internal_secret, x_internal_secret)


@router.post("/internal/tools/execute", summary="Run a published tool with empty variables",
             dependencies=[Depends(require_secret)])
async def execute(svc: Svc, body: InternalExecute) -> dict[str, Any]:
    raw = await svc.inline.store.get_tool(body.publishedToolId)
    parsed = svc.inline.definitions.parse(body.publishedToolId, raw)
    if raw is None:
        raise NotFound(f"tool não encontrada: publishedToolId={body.publishedToolId}",
                       code="tool_not_found")
    published = parsed if not isinstance(parsed, tuple) else parsed[0]
    run = await svc.inline.run(published, grant=for_internal(published), inputs=body.inputs,
                               variables={})
    await svc.inline.record_executions(run)
    out = run.body()
    out.pop("variables", None)  # tool-local writes never leave the tool
    return out
