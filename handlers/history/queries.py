"""Reading the history: finding runs (filters, newest first, cursor pages) and one run with
its trace and the definition it ran.

Access is the runtime's rule: a run belongs to the workspace its tree was fixed in when it
started (the ``workspace`` column, written from its execution event, never derived from the
registry). The caller names the workspace (None: every workspace, for the operator's shell),
and the filter is applied in SQL, so a page is never short because rows were hidden after it.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from chatflow.runtime.errors import ChatflowError

from ..projections.execlog import Parsed
from .schema import definitions, runs, steps

STATUSES = ("ok", "error", "cancelled", "timeout")
MAX_LIMIT = 200


class BadQuery(ChatflowError):
    """Raised when a history query's filter or cursor cannot be read."""


def owned_by(workspace: str | None) -> sa.ColumnElement[bool]:
    """The runs ``workspace`` may see (None: all of them)."""
    return sa.true() if workspace is None else runs.c.workspace == workspace


def time_ms(value: str | None, name: str) -> int | None:
    """A time filter as epoch milliseconds: epoch ms, or an ISO 8601 time
    (``2026-01-02T03:04:05Z``); None when absent. The API (``since``, ``until``), the audit
    trail and ``chatflow executions`` (``--since``, ``--until``) all read times here."""
    if not value:
        return None
    if value.isdecimal():
        return in_range(int(value), name)
    try:
        ms = int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except (ValueError, OverflowError) as exc:
        raise BadQuery(f"{name} {value!r}: expected epoch milliseconds or an ISO 8601 time "
                       "such as 2026-01-02T03:04:05Z") from exc
    return in_range(ms, name)


# Epoch milliseconds a filter may name: up to 2^53 - 1 (JavaScript's safe integers, year
# 287396). Larger ones would overflow the database's BIGINT, and no run is that late.
MAX_MS = 2**53 - 1


def in_range(ms: int, name: str) -> int:
    if not 0 <= ms <= MAX_MS:
        raise BadQuery(f"{name} {ms}: epoch milliseconds from 0 to {MAX_MS}")
    return ms


@dataclass(frozen=True, slots=True)
class Filters:
    tool_id: str | None = None
    published_tool_id: str | None = None
    status: str | None = None
    error_code: str | None = None
    contact_id: str | None = None
    since_ms: int | None = None  # started at or after
    until_ms: int | None = None  # started before
    children: bool | None = None  # None: roots only, unless a tool filter is given

    @classmethod
    def parse(cls, *, tool_id: str | None = None, published_tool_id: str | None = None,
              status: str | None = None, error_code: str | None = None,
              contact_id: str | None = None, since: str | None = None,
              until: str | None = None, children: bool | None = None,
              names: tuple[str, str] = ("since", "until")) -> Filters:
        """The filters of ``GET /executions`` and ``chatflow executions`` as given (``names``:
        how the caller spells the time filters, for the error); raises BadQuery."""
        return cls(tool_id=tool_id, published_tool_id=published_tool_id, status=status,
                   error_code=error_code, contact_id=contact_id,
                   since_ms=time_ms(since, names[0]), until_ms=time_ms(until, names[1]),
                   children=children)

    def admits_running(self, tool_id: str, published_tool_id: str, contact_id: str | None,
                       started_ms: int | None = None) -> bool:
        """Whether a run in flight matches: it has no status or error code yet, so a filter
        on either leaves it out."""
        return (self.status is None and self.error_code is None
                and (self.tool_id is None or tool_id == self.tool_id)
                and (self.published_tool_id is None or published_tool_id == self.published_tool_id)
                and (self.contact_id is None or contact_id == self.contact_id)
                and (started_ms is None or self.since_ms is None or started_ms >= self.since_ms)
                and (started_ms is None or self.until_ms is None or started_ms < self.until_ms))

    def clauses(self) -> list[sa.ColumnElement[bool]]:
        out: list[sa.ColumnElement[bool]] = []
        if self.status is not None:
            if self.status not in STATUSES:
                raise BadQuery(f"status {self.status!r}: expected one of {', '.join(STATUSES)}")
            out.append(runs.c.status == self.status)
        for value, col in ((self.tool_id, runs.c.tool_id),
                           (self.published_tool_id, runs.c.published_tool_id),
                           (self.error_code, runs.c.error_code),
                           (self.contact_id, runs.c.contact_id)):
            if value is not None:
                out.append(col == value)
        if self.since_ms is not None:
            out.append(runs.c.started_ms >= self.since_ms)
        if self.until_ms is not None:
            out.append(runs.c.started_ms < self.until_ms)
        children = self.children
        if children is None:
            children = self.tool_id is not None or self.published_tool_id is not None
        if not children:
            out.append(runs.c.depth == 0)
        return out


def encode_cursor(started_ms: int, execution_id: str) -> str:
    return base64.urlsafe_b64encode(f"{started_ms}:{execution_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        ms, _, exec_id = raw.partition(":")
        return in_range(int(ms), "cursor"), exec_id
    except (ValueError, UnicodeDecodeError, BadQuery) as exc:
        raise BadQuery(f"cursor {cursor[:40]!r} is not one this API returned: pass the "
                       "nextCursor of the previous page unchanged") from exc


def run_json(row: Any) -> dict[str, Any]:
    """A run row as the API and the CLI show it (camelCase, as the wire types)."""
    r = row._mapping
    forked = ({"executionId": r["forked_from_execution_id"], "blockId": r["forked_from_block_id"]}
              if r["forked_from_execution_id"] else None)
    return {
        "executionId": r["execution_id"], "rootExecutionId": r["root_execution_id"],
        "parentExecutionId": r["parent_execution_id"], "depth": r["depth"],
        "toolId": r["tool_id"], "publishedToolId": r["published_tool_id"],
        "definitionHash": r["def_hash"], "contactId": r["contact_id"],
        "commandId": r["command_id"], "state": "finished", "status": r["status"],
        "errorCode": r["error_code"], "errorMessage": r["error_message"], "result": r["result"],
        "startedMs": r["started_ms"], "endedMs": r["ended_ms"], "durationMs": r["duration_ms"],
        "trace": r["trace"], "forkedFrom": forked, "workspace": r["workspace"] or "default",
    }


def step_json(row: Any) -> dict[str, Any]:
    r = row._mapping
    http = ({"method": r["http_method"], "url": r["http_url"], "status": r["http_status"]}
            if r["http_method"] or r["http_url"] else None)
    error = ({"code": r["error_code"], "message": r["error_message"]}
             if r["error_code"] else None)
    return {"seq": r["seq"], "type": r["type"], "at": r["at_ms"], "blockId": r["block_id"],
            "blockType": r["block_type"], "durationMs": r["duration_ms"], "ok": r["ok"],
            "error": error, "matchedConditionId": r["matched_condition_id"],
            "next": r["next_block"], "child": r["child_execution_id"], "http": http,
            "result": r["result"], "writes": r["writes"], "detail": r["detail"]}


async def list_runs(engine: AsyncEngine, workspace: str | None, filters: Filters, *,
                    limit: int = 50, cursor: str | None = None
                    ) -> tuple[list[dict[str, Any]], str | None]:
    """One page, newest first; the cursor of the next page, or None at the end."""
    limit = max(1, min(limit, MAX_LIMIT))
    where = [owned_by(workspace), *filters.clauses()]
    if cursor:
        ms, exec_id = decode_cursor(cursor)
        where.append(sa.or_(runs.c.started_ms < ms,
                            sa.and_(runs.c.started_ms == ms, runs.c.execution_id < exec_id)))
    query = (sa.select(runs).where(*where)
             .order_by(runs.c.started_ms.desc(), runs.c.execution_id.desc()).limit(limit + 1))
    async with engine.connect() as conn:
        found = list(await conn.execute(query))
    page = [run_json(r) for r in found[:limit]]
    more = len(found) > limit
    return page, (encode_cursor(page[-1]["startedMs"], page[-1]["executionId"])
                  if more and page else None)


async def get_run(engine: AsyncEngine, workspace: str | None,
                  execution_id: str) -> dict[str, Any] | None:
    """A run, its trace, its children (ids) and the definition it ran; None when it is not
    in the history or is another workspace's (``workspace`` None: the shell sees all)."""
    async with engine.connect() as conn:
        row = (await conn.execute(sa.select(runs).where(runs.c.execution_id == execution_id,
                                                        owned_by(workspace)))).first()
        if row is None:
            return None
        trace = list(await conn.execute(sa.select(steps).where(steps.c.execution_id ==
                                                               execution_id)
                                        .order_by(steps.c.seq)))
        children = list(await conn.execute(
            sa.select(runs.c.execution_id).where(runs.c.parent_execution_id == execution_id,
                                                 owned_by(workspace))
            .order_by(runs.c.started_ms)))
        forks = list(await conn.execute(
            sa.select(runs.c.execution_id).where(runs.c.forked_from_execution_id == execution_id,
                                                 owned_by(workspace))
            .order_by(runs.c.started_ms)))
        published = None
        if row.def_hash:
            published = (await conn.execute(sa.select(definitions.c.definition)
                                            .where(definitions.c.def_hash == row.def_hash))
                         ).scalar()
    out = run_json(row)
    out["steps"] = [step_json(s) for s in trace]
    out["children"] = [c.execution_id for c in children]
    out["forks"] = [f.execution_id for f in forks]
    out["published"] = published
    return out


async def metric_rows(engine: AsyncEngine, since_ms: int,
                      page: int = 1_000) -> AsyncIterator[list[Parsed]]:
    """Every run that ended at or after ``since_ms``, as the metrics projection reads an
    execution event (tool, end, ok, duration; the execution id is the dedup), a page at a
    time: what ``chatflow projections rebuild`` replays when the stream no longer holds it."""
    after: tuple[int, str] = (since_ms - 1, "")
    while True:
        async with engine.connect() as conn:
            rows = (await conn.execute(
                sa.select(runs.c.execution_id, runs.c.tool_id, runs.c.ended_ms, runs.c.status,
                          runs.c.duration_ms)
                .where(sa.tuple_(runs.c.ended_ms, runs.c.execution_id) > after)
                .order_by(runs.c.ended_ms, runs.c.execution_id).limit(page))).all()
        if not rows:
            return
        yield [Parsed(r.execution_id, r.tool_id, int(r.ended_ms), r.status == "ok",
                      int(r.duration_ms)) for r in rows]
        after = (int(rows[-1].ended_ms), rows[-1].execution_id)
        if len(rows) < page:
            return
