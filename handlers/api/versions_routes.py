"""``/tools/{id}/versions``, ``/tools/{id}/diff`` and ``/tools/{id}/rollback``: a tool's
published versions (docs/registry.md "Versions")."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from ..registry.gate import rollback_gated
from ..registry.models import RollbackIn
from ..registry.versions import parse_side
from .auth import Caller
from .authorization import Authorized, refuse_unresolved_references
from .contract import answers
from .deps import Services, services

router = APIRouter(tags=["versions"])
Svc = Annotated[Services, Depends(services)]


@router.get("/tools/{tool_id}/versions", responses=answers(404),
            summary="The tool's published versions, newest first, and the tools that call it")
async def list_versions(svc: Svc, who: Caller, tool_id: str) -> dict[str, Any]:
    return await svc.versions.list(tool_id, scope=who.scope)


@router.get("/tools/{tool_id}/versions/{number}", responses=answers(404),
            summary="One published version, with its definition")
async def get_version(svc: Svc, who: Caller, tool_id: str, number: str) -> dict[str, Any]:
    # Any text: a version that is not a number is one that does not exist (404).
    wanted = int(number) if number.isdecimal() else 0
    return await svc.versions.get(tool_id, wanted, number_text=number, scope=who.scope)


@router.get("/tools/{tool_id}/diff", responses=answers(404),
            summary="What changed between two versions (or the draft), by block and field")
async def diff_versions(
        svc: Svc, who: Caller, tool_id: str,
        from_: Annotated[str | None, Query(alias="from", max_length=20,
                                           description="a version number or 'draft'; absent: "
                                                       "the published version")] = None,
        to: Annotated[str, Query(max_length=20, description="a version number or 'draft'")]
        = "draft") -> dict[str, Any]:
    left = parse_side(from_) if from_ is not None else None
    return await svc.versions.diff(tool_id, left, parse_side(to), scope=who.scope)


@router.post("/tools/{tool_id}/rollback", responses=answers(404, 409, 429),
             summary="Publish version n's definition again, as the next version, if the "
                     "saved test cases pass on it")
async def rollback(svc: Svc, grant: Authorized, tool_id: str,
                   body: RollbackIn) -> dict[str, Any]:
    """A rollback is a publish: 409 ``tests_failed`` lists the cases that fail on version
    n; ``force: true`` rolls back anyway and keeps them, with the ``note``, in the version."""
    old = await svc.versions.get(tool_id, body.version, scope=grant.scope)
    refuse_unresolved_references(svc, grant, old["definition"])
    async with await svc.gate_held(grant.actor, grant.workspace, tool_id):
        return await rollback_gated(svc.versions, svc.case_runner, tool_id, body.version,
                                    note=body.note, force=body.force, scope=grant.scope)
