"""``/me`` (who the key is), and for admins ``/audit`` (the registry's changes) and
``/keys`` (the workspace's API keys: list, create, revoke)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from ..controlplane.apikeys import ApiKeyError, create_api_key, list_api_keys, revoke_api_key
from ..registry.audit import audit_trail
from ..registry.errors import ApiCode, Invalid, NotFound
from .auth import Admin, Caller
from .contract import answers
from .deps import Services, services

router = APIRouter(tags=["access"])
Svc = Annotated[Services, Depends(services)]


@router.get("/me", summary="The calling key: id, name, workspace, role")
async def me(who: Caller) -> dict[str, Any]:
    return {"keyId": who.key_id, "name": who.name, "workspace": who.workspace, "role": who.role}


def _ms(value: str | None, name: str) -> int | None:
    from ..history.queries import BadQuery, time_ms

    try:  # one time parser with GET /executions and chatflow executions
        return time_ms(value, name)
    except BadQuery as exc:
        raise Invalid(str(exc), code=ApiCode.INVALID_REQUEST) from exc


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


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["admin", "editor", "viewer"]
    name: str | None = Field(default=None, min_length=1, max_length=100)
    expiresInDays: float | None = Field(default=None, gt=0, le=36_500)


@router.get("/keys", summary="The workspace's API keys (admin; never a token)")
async def list_keys(svc: Svc, who: Admin) -> list[dict[str, Any]]:
    return await list_api_keys(svc.client, svc.keys, who.workspace)


@router.post("/keys", status_code=201,
             summary="Create an API key in this workspace (admin); the token is shown once")
async def create_key(svc: Svc, who: Admin, body: KeyCreate) -> dict[str, Any]:
    try:
        key_id, token = await create_api_key(svc.client, svc.keys, workspace=who.workspace,
                                             role=body.role, name=body.name,
                                             expires_in_days=body.expiresInDays)
    except ApiKeyError as exc:
        raise Invalid(str(exc), code=ApiCode.INVALID_REQUEST) from exc
    listed = {k["keyId"]: k for k in await list_api_keys(svc.client, svc.keys, who.workspace)}
    return {**listed[key_id], "token": token}


@router.delete("/keys/{key_id}", responses=answers(404),
               summary="Revoke an API key of this workspace (admin)")
async def revoke_key(svc: Svc, who: Admin, key_id: str) -> dict[str, Any]:
    mine = {k["keyId"] for k in await list_api_keys(svc.client, svc.keys, who.workspace)}
    if key_id not in mine:
        raise NotFound(f"no API key {key_id!r}")
    await revoke_api_key(svc.client, svc.keys, key_id)
    return {"keyId": key_id, "revoked": True}
