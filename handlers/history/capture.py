"""Execution events and their event logs, turned into history rows, secrets masked.

The event on ``stream:tool-executions`` says a run ended; its trace is the execution's
entries in its tree's event log (``{cf:N}:log:<rootId>``), which lives only ``CHATFLOW_STATE_TTL_S`` (1 h by
default). So the trace is read when the event is consumed, right after the run ended. A log
already gone (a projection that was down longer than the TTL, a Valkey restart without
persistence) leaves the run's row with ``trace = 'expired'`` and no steps.

Every value that reaches a row goes through the one masking policy
(``chatflow.runtime.masking``): secret-named keys at any depth (a ``result`` that is JSON
included), ``Bearer ...`` and secret-named query parameters inside text, anything deeper
than its depth cap, and every stored secret value of the run's workspace, wherever it
appears (an upstream that echoed it back, a script that copied it). The caller hands those
values (``handlers.redaction.SecretIndex``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from chatflow.runtime.masking import mask, mask_json_text
from chatflow.runtime.state import LogEntry, decode_log
from chatflow.schemas.wire import ScopedExecutionEvent

from ..keys import Keys
from ..redis_client import Client, Entry

# Every execution event read as the scoped one: a run of ``default`` writes the plain event,
# which reads as workspace ``default``.
_event = msgspec.json.Decoder(ScopedExecutionEvent)
Secrets = tuple[str, ...]  # the workspace's stored secret values, masked wherever they appear
MAX_TEXT = 64 * 1024  # a result or a message longer than this is cut: rows stay bounded
_STATUS = {"tool_timeout": "timeout", "execution_cancelled": "cancelled"}




@dataclass(slots=True)
class Captured:
    run: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)
    def_hash: str | None = None
    partition: int | None = None


def _text(value: Any, secrets: Secrets) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return mask_json_text(text, secrets)[:MAX_TEXT]


def _ms(iso: str, fallback: int) -> int:
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return fallback


def status_of(event: ScopedExecutionEvent) -> str:
    if event.success:
        return "ok"
    return _STATUS.get(event.errorCode or "", "error")


def parse_events(entries: list[Entry]) -> list[tuple[str, ScopedExecutionEvent, int]]:
    """(dedup id, event, entry ms) of every readable execution event; others are skipped."""
    out = []
    for entry_id, fields in entries:
        raw = fields.get(b"data")
        if raw is None:
            continue
        try:
            event = _event.decode(raw)
        except msgspec.DecodeError:
            continue
        # An outside producer's event (the contract's shape, docs/spec.md) may have no executionId: the
        # stream entry id is then the stable identity of a redelivery.
        dedup = event.executionId or f"entry:{entry_id.decode()}"
        out.append((dedup, event, int(entry_id.split(b"-", 1)[0])))
    return out


async def read_logs(client: Client, keys: Keys, exec_ids: list[str]) -> dict[str, list[LogEntry]]:
    """The event logs of ``exec_ids``, in one pipelined round trip (ids that name no
    partition are left out). A tree's log is one string of its root (``Keys.log``), a line
    per transition, decoded by the runtime's one decoder (``runtime.state.decode_log``); a
    tree the previous version started also has per-execution streams (``Keys.events``),
    whose entries come first, as in ``handlers.interfaces.client.trace``."""
    wanted: list[tuple[str, int, str]] = []
    for exec_id in exec_ids:
        try:
            partition = keys.partition_of_exec(exec_id)
        except ValueError:
            continue
        wanted.append((exec_id, partition, exec_id.split(".", 1)[0]))
    if not wanted:
        return {}
    roots = list(dict.fromkeys((p, root) for _e, p, root in wanted))
    async with client.pipeline(transaction=False) as pipe:
        for partition, root in roots:
            pipe.get(keys.log(partition, root))
        for exec_id, partition, _root in wanted:
            pipe.xrange(keys.events(partition, exec_id))
        replies = await pipe.execute()
    by_exec: dict[str, list[LogEntry]] = {}
    for raw in replies[:len(roots)]:
        for entry in decode_log(raw or b""):
            by_exec.setdefault(entry.execId, []).append(entry)
    out: dict[str, list[LogEntry]] = {}
    for (exec_id, _p, _r), old in zip(wanted, replies[len(roots):], strict=True):
        out[exec_id] = ([e for _id, fields in old for e in decode_log(fields[b"d"])]
                        + by_exec.get(exec_id, []))
    return out


def _contact(log: list[LogEntry]) -> str | None:
    started = next((e for e in log if e.type == "started"), None)
    if started is None or not started.detail:
        return None
    contact = (started.detail.get("context") or {}).get("contact") or {}
    value = contact.get("id") if isinstance(contact, dict) else None
    return str(value) if value is not None else None


def _root_tool(event: ScopedExecutionEvent, root_log: list[LogEntry]) -> str:
    """The root's publishedToolId: the run's own at depth 0, else its root's ``started``
    entry; a child whose root log is gone keeps its own (documented in docs/history.md)."""
    if event.depth == 0:
        return event.publishedToolId
    started = next((e for e in root_log if e.type == "started" and "." not in e.execId), None)
    tool = (started.detail or {}).get("publishedToolId") if started is not None else None
    return str(tool) if tool else event.publishedToolId


def step_row(exec_id: str, seq: int, e: LogEntry, secrets: Secrets = ()) -> dict[str, Any]:
    detail = dict(e.detail or {})
    method, url, status = detail.get("method"), detail.get("url"), detail.get("status")
    return {
        "execution_id": exec_id, "seq": seq, "type": e.type, "at_ms": e.at,
        "block_id": e.blockId, "block_type": e.blockType, "duration_ms": e.durationMs,
        "ok": e.ok, "error_code": e.error.code if e.error else None,
        "error_message": _text(e.error.message, secrets) if e.error else None,
        "matched_condition_id": e.matchedConditionId, "next_block": e.next,
        "child_execution_id": e.child,
        "http_method": str(method)[:16] if method is not None else None,
        "http_url": _text(url, secrets),
        "http_status": status if isinstance(status, int) else None,
        "result": _text(e.result, secrets),
        "writes": mask(e.writes, secrets) if e.writes else None,
        "detail": mask(detail, secrets) if detail else None,
    }


def capture(dedup: str, event: ScopedExecutionEvent, entry_ms: int,
            log: list[LogEntry] | None, root_log: list[LogEntry] | None,
            secrets: Secrets = ()) -> Captured:
    """The run row (and its steps, when the log was still there) of one execution event."""
    ended = _ms(event.occurredAt, entry_ms)
    duration = max(0, event.durationMs)
    log = log or []
    started = next((e for e in log if e.type == "started"), None)
    end = next((e for e in reversed(log) if e.type in ("finished", "aborted")), None)
    detail = (started.detail or {}) if started is not None else {}
    error = end.error if end is not None else None
    exec_id = event.executionId or dedup
    parent = detail.get("parent")
    if parent is None and "." in exec_id:
        parent = exec_id.rsplit(".", 1)[0]
    run = {
        "execution_id": dedup, "root_execution_id": event.rootExecutionId or exec_id,
        "parent_execution_id": parent, "depth": event.depth,
        "tool_id": event.toolId or event.publishedToolId,
        "published_tool_id": event.publishedToolId,
        "root_published_tool_id": _root_tool(event, root_log or log),
        "def_hash": detail.get("defHash") or None,
        "contact_id": _contact(root_log or log),
        "command_id": event.commandId, "status": status_of(event),
        "error_code": event.errorCode or (error.code if error else None),
        "error_message": _text(error.message, secrets) if error else None,
        "result": _text(end.result, secrets) if end is not None else None,
        "inputs": mask(detail.get("inputs"), secrets) if detail.get("inputs") else None,
        "started_ms": started.at if started is not None else ended - duration,
        "ended_ms": ended, "duration_ms": duration,
        "trace": "stored" if log else "expired",
        "forked_from_execution_id": None, "forked_from_block_id": None,
        "workspace": event.workspace,
    }
    steps = [step_row(dedup, seq, e, secrets) for seq, e in enumerate(log)]
    partition = None
    if event.executionId:
        try:
            partition = int(event.executionId.split("-", 1)[0])
        except ValueError:
            partition = None
    def_hash = detail.get("defHash")
    return Captured(run, steps, str(def_hash) if def_hash else None, partition)
