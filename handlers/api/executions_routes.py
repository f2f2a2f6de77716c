"""``/executions``: executions in flight, seen and stopped from the HTTP API.

``POST /executions/{executionId}/cancel`` ends the execution's whole callTool tree
through ``chatflow.handlers.dataplane.trees``, the same code as ``chatflow cancel`` and the
deadline reaper: the caller of the command gets exactly one ``execution_cancelled``
result, and the cancellation is counted where every process's ``/metrics`` sees it.
Editors and admins only; a tree whose root tool is another workspace's answers 404.

``GET /executions`` and ``GET /executions/{id}/events`` are what ``chatflow executions`` and
``chatflow replay`` read, for the Studio, confined to the caller's workspace the same way.

With ``?state=running|finished|all``, ``GET /executions`` also finds finished runs in the
run history (``CHATFLOW_HISTORY_URL``, docs/history.md), filtered and paged with a cursor:
``{"executions": [...], "nextCursor": ...}``. Without ``state`` it answers the list of
executions in flight, as before. ``GET /executions/{id}/history`` is one run from the
history: its trace, its children, and the definition it ran.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Annotated, Any, Literal

import msgspec
from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from chatflow.runtime.state import ExecState

from ..dataplane.trees import cancel_execution
from ..registry.errors import ApiCode, Conflict, Invalid, NotFound, RegistryError
from ..registry.scope import Grant
from ..studio.scope import tree_workspace
from .auth import Caller, Writer
from .authorization import Authorized, refuse_unresolved_references
from .contract import answers
from .deps import Services, services

router = APIRouter(tags=["executions"])
Svc = Annotated[Services, Depends(services)]


class CancelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(default="", max_length=500,
                        description="appended to the cancellation error the caller receives")


@router.post("/executions/{executionId}/cancel", responses=answers(404, 409),
             summary="Cancel an execution in flight and its whole callTool tree")
async def cancel(executionId: str, svc: Svc, who: Writer,
                 body: Annotated[CancelRequest | None, Body()] = None) -> dict[str, Any]:
    def ours(root: ExecState) -> bool:  # the tree's workspace, fixed when it started
        return root.root.workspace == who.workspace

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


class HistoryUnavailable(RegistryError):
    """Raised when the run history is not configured or its database cannot answer (503)."""

    status = 503
    code = ApiCode.HISTORY_UNAVAILABLE


def _history(svc: Services) -> Any:
    if svc.history is None:
        raise HistoryUnavailable("no run history: set CHATFLOW_HISTORY_URL (sqlite:///path or "
                                 "postgresql://...) and run `chatflow history upgrade`; "
                                 "`chatflow up` keeps one in its data folder")
    return svc.history


@router.get("/executions", responses=answers(503),
            summary="Executions in flight; with ?state=, finished runs too, filtered and paged")
async def list_executions(
        svc: Svc, who: Caller,
        state: Annotated[Literal["running", "finished", "all"] | None,
                         Query(description="running, finished or all; absent: the "
                                           "executions in flight as a bare list")] = None,
        toolId: Annotated[str | None, Query(max_length=200)] = None,
        publishedToolId: Annotated[str | None, Query(max_length=200)] = None,
        status: Annotated[Literal["ok", "error", "cancelled", "timeout"] | None, Query()] = None,
        errorCode: Annotated[str | None, Query(max_length=100)] = None,
        contactId: Annotated[str | None, Query(max_length=200)] = None,
        since: Annotated[str | None, Query(max_length=40,
                                           description="started at or after (ms or ISO)")] = None,
        until: Annotated[str | None, Query(max_length=40,
                                           description="started before (ms or ISO)")] = None,
        children: Annotated[bool | None, Query(description="nested runs too (default: only "
                                                           "with a tool filter)")] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        cursor: Annotated[str | None, Query(max_length=600)] = None,
) -> Any:
    # Imported here: chatflow.handlers.cli imports this package (``chatflow api``).
    from ..cli.executions_cmd import in_flight

    # Each tree's workspace was fixed when it started (RootInfo.workspace).
    if state is None:
        return [asdict(row) for row in await in_flight(svc.client, svc.keys)
                if row.workspace == who.workspace]
    from sqlalchemy.exc import SQLAlchemyError

    from ..history.queries import BadQuery, Filters, list_runs

    try:
        filters = Filters.parse(tool_id=toolId, published_tool_id=publishedToolId,
                                status=status, error_code=errorCode, contact_id=contactId,
                                since=since, until=until, children=children)
    except BadQuery as exc:
        raise Invalid(str(exc)) from exc
    running: list[dict[str, Any]] = []
    if state in ("running", "all") and not cursor:
        now = int(time.time() * 1000)
        for row in await in_flight(svc.client, svc.keys, now):
            started = now - row.ageMs
            if (row.workspace == who.workspace
                    and filters.admits_running(row.toolId, row.tool, row.contactId, started)):
                running.append({**asdict(row), "state": "running", "startedMs": started})
        running.sort(key=lambda r: -int(r["startedMs"]))
    if state == "running":
        return {"executions": running, "nextCursor": None}
    try:
        page, next_cursor = await list_runs(_history(svc), who.workspace, filters,
                                            limit=limit, cursor=cursor)
    except BadQuery as exc:
        raise Invalid(str(exc)) from exc
    except (SQLAlchemyError, OSError) as exc:
        raise HistoryUnavailable(f"the run history cannot answer: {exc.__class__.__name__}; "
                                 "check CHATFLOW_HISTORY_URL and run `chatflow history "
                                 "upgrade`") from exc
    return {"executions": running + page, "nextCursor": next_cursor}


@router.get("/executions/{execution_id}/history", responses=answers(404, 503),
            summary="A finished run from the history: its trace, children, forks, definition")
async def execution_history(svc: Svc, who: Caller, execution_id: str) -> dict[str, Any]:
    from sqlalchemy.exc import SQLAlchemyError

    from ..history.queries import get_run

    try:
        run = await get_run(_history(svc), who.workspace, execution_id)
    except (SQLAlchemyError, OSError) as exc:
        raise HistoryUnavailable(f"the run history cannot answer: {exc.__class__.__name__}; "
                                 "check CHATFLOW_HISTORY_URL and run `chatflow history "
                                 "upgrade`") from exc
    if run is None:
        raise NotFound(f"no run {execution_id!r} in the history (not finished yet, pruned "
                       "after CHATFLOW_HISTORY_RUN_RETENTION_S, or never existed)",
                       code=ApiCode.EXECUTION_NOT_FOUND)
    run.update(await _trace_of(svc, who.workspace, run))
    return run


async def _trace_of(svc: Services, workspace: str, run: dict[str, Any]) -> dict[str, Any]:
    """While tracing is configured (an OTLP endpoint or CHATFLOW_TRACE_URL): the run's
    ``traceId`` (its command's traceparent, recorded in the root's ``started`` step, else the
    one derived from the root's id) and ``traceUrl``, CHATFLOW_TRACE_URL with it filled in."""
    s = svc.settings
    if not (s.trace_url or s.traces_endpoint()):
        return {}
    from ..history.queries import get_run
    from ..operations.traceids import trace_id_hex

    root_id = str(run.get("rootExecutionId") or run["executionId"])
    root = run if root_id == run["executionId"] else await get_run(
        _history(svc), workspace, root_id)
    started = next((st for st in (root or {}).get("steps", []) if st.get("type") == "started"),
                   None)
    header = ((started or {}).get("detail") or {}).get("traceparent")
    trace_id = trace_id_hex(root_id, header if isinstance(header, str) else "")
    url = s.trace_url.replace("{traceId}", trace_id) if s.trace_url else None
    return {"traceId": trace_id, "traceUrl": url}


@router.get("/executions/{execution_id}/events", responses=answers(404),
            summary="An execution's event log with its children's, replayed and checked")
async def execution_events(svc: Svc, who: Caller, execution_id: str) -> dict[str, Any]:
    from ..cli.replay_cmd import replay_execution

    try:
        report = await replay_execution(svc.client, svc.keys, execution_id)
    except ValueError as exc:  # an id that names no partition
        raise NotFound(f"no execution {execution_id!r}", code=ApiCode.EXECUTION_NOT_FOUND) from exc
    if report.trace and tree_workspace(report.trace) != who.workspace:
        report.trace.clear()  # another workspace's execution reads exactly like a missing one
    if not report.trace:
        raise NotFound(f"no event log for execution {execution_id!r} (expired after "
                       "CHATFLOW_STATE_TTL_S, or never existed)", code=ApiCode.EXECUTION_NOT_FOUND)
    return {"executionId": execution_id, "events": msgspec.to_builtins(report.trace),
            "replay": {"executions": report.executions, "transitions": report.transitions,
                       "firstDifference": None if report.first is None else str(report.first)}}


class ForkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fromBlockId: str = Field(min_length=1, max_length=200,
                             description="the block the new run starts at")
    variables: dict[str, Any] = Field(default_factory=dict,
                                      description="laid over the variables the original had "
                                                  "when it reached the block")
    definition: dict[str, Any] | Literal["draft"] | None = Field(
        default=None, description="the definition to run: absent, the version the run used; "
                                  "\"draft\", the tool's current draft; or a JSON definition")


@router.post("/executions/{execution_id}/fork", responses=answers(202, 404, 429, 503),
             summary="Run a finished execution again from one of its blocks")
async def fork_execution(svc: Svc, grant: Authorized, execution_id: str, body: ForkRequest,
                         wait: Annotated[bool, Query(description="wait for the answer and "
                                                                 "return it with the trace")]
                         = False) -> Any:
    from fastapi.responses import JSONResponse

    from ..history.queries import get_run
    from ..interfaces.client import ResultTimeout, trace, wait_results

    await svc.registry.catch_up()
    run = await get_run(_history(svc), grant.workspace, execution_id)
    if run is None:
        raise NotFound(f"no run {execution_id!r} in the history (forks start from finished "
                       "runs)", code=ApiCode.EXECUTION_NOT_FOUND)
    definition: dict[str, Any] | None = None
    if body.definition == "draft":
        tool = svc.registry.state.tool_in(str(run["toolId"]), grant.workspace)
        if tool is None:
            raise NotFound(f"tool {run['toolId']!r} has no draft in this workspace")
        definition = tool.get("definition")
    elif isinstance(body.definition, dict):
        definition = body.definition
    refuse_unresolved_references(svc, grant, definition if definition is not None
                                 else (run.get("published") or {}).get("definition"))
    if not wait:
        _fork, started = await _start_fork(svc, grant, run, body, definition, execution_id)
        return JSONResponse(started, status_code=202)
    timeout_s = svc.settings.tool_timeout_ms / 1000 + 10
    # The lease is taken before the fork starts: a request over its key's or workspace's cap
    # gets its 429 with nothing run (a refused fork that ran anyway would repeat its calls
    # when the client tries again).
    async with svc.held.hold(grant.actor, grant.workspace, for_ms=int(timeout_s * 1000)) as held:
        fork, started = await _start_fork(svc, grant, run, body, definition, execution_id)
        try:
            found = await wait_results(held.client, fork.reply_to, {fork.command.commandId},
                                       after=b"0-0", timeout_s=timeout_s)
        except ResultTimeout:  # still running (a slow machine): the answer lands in replyTo
            return JSONResponse({**started, "waited": False, "message": (
                f"no answer within {timeout_s:g}s; it will arrive on replyTo")},
                status_code=202)
    result = found[fork.command.commandId][0]
    if fork.reply_to != svc.keys.results:
        await svc.client.delete(fork.reply_to)  # private to this call
    entries = await trace(svc.client, svc.keys, result.executionId) if result.executionId else []
    return {**started, "executionId": result.executionId,
            "result": msgspec.to_builtins(result), "trace": msgspec.to_builtins(entries)}


async def _start_fork(svc: Services, grant: Grant, run: dict[str, Any], body: ForkRequest,
                      definition: dict[str, Any] | None, execution_id: str
                      ) -> tuple[Any, dict[str, Any]]:
    """Publish the fork's record and command; the fork and what the route answers of it."""
    from ..history.fork import ForkRefused, start_fork

    try:
        fork = await start_fork(svc.client, svc.keys, run, grant=grant,
                                from_block=body.fromBlockId,
                                variables=body.variables, definition=definition,
                                ttl_s=svc.settings.state_ttl_s,
                                reply_allowed=svc.settings.reply_allowed())
    except ForkRefused as exc:
        raise Invalid(str(exc), code=exc.code) from exc
    forked_from = {"executionId": execution_id, "blockId": body.fromBlockId}
    return fork, {"commandId": fork.command.commandId, "publishedToolId": fork.published_tool_id,
                  "replyTo": fork.reply_to, "forkedFrom": forked_from}
