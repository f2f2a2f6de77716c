"""``/me`` (who the key is) and ``/audit`` (the registry's changes, for admins)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from ..registry.audit import audit_trail
from ..registry.errors import Invalid
from .auth import Admin, Caller
from .deps import Services, services

router = APIRouter(tags=["access"])
Svc = Annotated[Services, Depends(services)]


@router.get("/me", summary="The calling key: id, name, workspace, role")
async def me(who: Caller) -> dict[str, Any]:
    return {"keyId": who.key_id, "name": who.name, "workspace": who.workspace, "role": who.role}


def _ms(value: str | None, name: str) -> int | None:
    """An ISO 8601 time or epoch milliseconds."""
    if value is None:
        return None
    if value.isdigit():
        return int(value)
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError as exc:
        raise Invalid(f"{name}: {value!r} is not an ISO 8601 time or epoch milliseconds",
                      code="invalid_request") from exc


@router.get("/audit", summary="Who changed what in this workspace (admin)")
async def audit(svc: Svc, who: Admin,
                objectId: Annotated[str | None, Query(description="a tool, server, "
                                                      "endpoint, credential or agent id")] = None,
                since: Annotated[str | None, Query(description="ISO 8601 or epoch ms")] = None,
                until: Annotated[str | None, Query(description="ISO 8601 or epoch ms")] = None,
                limit: Annotated[int, Query(ge=1, le=5000)] = 500) -> list[dict[str, Any]]:
    return await audit_trail(svc.registry.log, who.workspace, object_id=objectId,
                             since_ms=_ms(since, "since"), until_ms=_ms(until, "until"),
                             limit=limit)
