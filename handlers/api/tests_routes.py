"""``/tools/{id}/tests``: a tool's saved test cases, their runs, and a case made from a
recorded run (docs/registry.md "Test cases").

Viewers read cases; running them, and every write, needs an editor or admin key. A run's
executions run in the caller's key's workspace.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from pydantic import ValidationError

from ..keys import origin_of
from ..registry.case_models import CaseIn, FromRun, RunCases
from ..registry.errors import ApiCode, Invalid, NotFound
from ..registry.recorded import case_from_run
from ..registry.tools import get_tool
from .auth import Caller, Writer
from .authorization import Authorized, refuse_unresolved
from .contract import answers
from .deps import Services, services
from .executions_routes import HistoryUnavailable, _history

router = APIRouter(tags=["tests"])
Svc = Annotated[Services, Depends(services)]
MAX_RUNS = 50  # runs of one tree read to make a case (the tree's invocation cap)


@router.get("/tools/{tool_id}/tests", responses=answers(404), summary="The tool's saved test cases")
async def list_cases(svc: Svc, who: Caller, tool_id: str) -> list[dict[str, Any]]:
    return await svc.cases.list(tool_id, scope=who.scope)


@router.post("/tools/{tool_id}/tests", status_code=201, responses=answers(404, 409),
             summary="Save a test case")
async def create_case(svc: Svc, who: Writer, tool_id: str, body: CaseIn) -> dict[str, Any]:
    return await svc.cases.create(tool_id, body, scope=who.scope)


@router.post("/tools/{tool_id}/tests/run", responses=answers(404, 429),
             summary="Run the saved test cases against the draft or a version")
async def run_cases(svc: Svc, grant: Authorized, tool_id: str,
                    body: Annotated[RunCases | None, Body()] = None) -> dict[str, Any]:
    body = body or RunCases()
    await svc.registry.catch_up()
    target = svc.case_runner.target(svc.registry.state, tool_id, body.version, grant.workspace)
    refuse_unresolved(svc, grant, target.raw)
    async with svc.held.hold(grant.actor, grant.workspace):
        return await svc.case_runner.run(tool_id, grant=grant, version=body.version,
                                         case_ids=body.cases)


@router.get("/tools/{tool_id}/tests/{case_id}", responses=answers(404), summary="One saved test case")
async def get_case(svc: Svc, who: Caller, tool_id: str, case_id: str) -> dict[str, Any]:
    return await svc.cases.get(tool_id, case_id, scope=who.scope)


@router.put("/tools/{tool_id}/tests/{case_id}", responses=answers(404, 409),
            summary="Replace a saved test case")
async def replace_case(svc: Svc, who: Writer, tool_id: str, case_id: str,
                       body: CaseIn) -> dict[str, Any]:
    if body.id is not None and body.id != case_id:
        raise Invalid(f"id: {body.id!r} is not the case in the path ({case_id!r})")
    return await svc.cases.replace(tool_id, case_id, body, scope=who.scope)


@router.delete("/tools/{tool_id}/tests/{case_id}", responses=answers(404),
               summary="Delete a saved test case")
async def delete_case(svc: Svc, who: Writer, tool_id: str, case_id: str) -> dict[str, Any]:
    return await svc.cases.delete(tool_id, case_id, scope=who.scope)


@router.post("/executions/{execution_id}/test-case", status_code=201, tags=["tests"],
             responses=answers(404, 409, 503),
             summary="Save a recorded run as a test case of its tool")
async def case_from_execution(svc: Svc, who: Writer, execution_id: str,
                              body: Annotated[FromRun | None, Body()] = None) -> dict[str, Any]:
    """The run's inputs, each external block's recorded answer as its mock, its result as
    the expectation; ``notes`` and the case's ``needs`` say what it could not keep."""
    from sqlalchemy.exc import SQLAlchemyError

    from ..history.queries import get_run

    body = body or FromRun()
    await svc.registry.catch_up()
    try:
        root = await get_run(_history(svc), who.workspace, execution_id)
        runs = [root] if root is not None else []
        todo = list(root["children"]) if root is not None else []
        while todo and len(runs) < MAX_RUNS:
            child = await get_run(_history(svc), who.workspace, todo.pop(0))
            if child is not None:
                runs.append(child)
                todo += child["children"]
    except (SQLAlchemyError, OSError) as exc:
        raise HistoryUnavailable(f"the run history cannot answer: {exc.__class__.__name__}"
                                 ) from exc
    if root is None:
        raise NotFound(f"no run {execution_id!r} in the history", code=ApiCode.EXECUTION_NOT_FOUND)
    tool_id = _tool_of(svc, str(root["publishedToolId"]), who.workspace)
    data, notes = case_from_run(root, runs, body.name or f"from run {execution_id[:18]}")
    try:
        case = CaseIn.model_validate({**data, **({"id": body.id} if body.id else {})})
    except ValidationError as exc:
        raise Invalid("the recorded run does not make a valid test case",
                      problems=[f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                                for e in exc.errors()]) from exc
    saved = await svc.cases.create(tool_id, case, scope=who.scope)
    return {**saved, "notes": notes}


def _tool_of(svc: Services, published_tool_id: str, workspace: str) -> str:
    """The tool a run belongs to: its published tool's (a test run's ``test-<toolId>``)."""
    state = svc.registry.state
    published_tool_id = origin_of(published_tool_id)  # a fork's run: the tool it forked
    tool_id = state.published.get(published_tool_id) or published_tool_id.removeprefix("test-")
    get_tool(state, tool_id, workspace=workspace)
    return tool_id
