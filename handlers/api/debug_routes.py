"""Live debug per contact: the flag ``debug:contact:{id}`` (read by the workers at intake; each
workspace sees and switches only its own claim on it, kept in ``debug:owners:{id}``) and
``stream:debug:{id}`` as server-sent events whose ids are the stream's entry ids, so a client
that reconnects with ``Last-Event-ID`` gets every later entry exactly once. Events of another
workspace's tools are sent as bare ``skipped`` events (handlers/studio/scope.py)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Annotated, Any

import structlog
from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..registry.errors import ApiCode, Invalid
from ..studio import scope
from .auth import Caller, Writer
from .contract import answers
from .deps import Services, services
from .held import Lease

log = structlog.get_logger("chatflow.api")
router = APIRouter(tags=["debug"])
Svc = Annotated[Services, Depends(services)]
STREAM_ID = re.compile(r"^\d{1,20}-\d{1,20}$")
# A blocked XREAD returns this often, so a closed connection is noticed and proxies see bytes.
HEARTBEAT_MS = 10_000
CONTACT_ID = r"^[^\s/]{1,200}$"


def _contact(contact_id: str) -> str:
    if not re.match(CONTACT_ID, contact_id):
        raise Invalid("contactId: 1 to 200 characters, no spaces or slashes",
                      code=ApiCode.INVALID_CONTACT)
    return contact_id


# The flag is one key per contact, read by the runtime (SPEC); which workspaces asked for it is
# a set beside it. A workspace sees and switches only its own claim: the flag stays on while any
# workspace (or a plain `SET debug:contact:ID 1`) holds it, and the last API claim removed
# takes it off. Two keys in different slots (the flag's name is the contract), so no
# transaction: each step is ordered so a racing PUT always wins (see debug_off).


@router.get("/debug/{contact_id}", summary="Is debug on for this contact, by this workspace?")
async def debug_state(svc: Svc, who: Caller, contact_id: str) -> dict[str, Any]:
    owners = svc.keys.debug_owners(_contact(contact_id))
    return {"contactId": contact_id,
            "enabled": bool(await svc.client.sismember(owners, who.workspace))}


@router.put("/debug/{contact_id}",
            summary="Switch debug on for a contact (every later execution emits debug events)")
async def debug_on(svc: Svc, who: Writer, contact_id: str) -> dict[str, Any]:
    contact = _contact(contact_id)
    # The claim first: a concurrent debug_off that sees it will not leave the flag deleted.
    await svc.client.sadd(svc.keys.debug_owners(contact), who.workspace)
    await svc.client.set(svc.keys.debug_flag(contact), "1")
    return {"contactId": contact_id, "enabled": True}


@router.delete("/debug/{contact_id}", summary="Switch debug off for a contact, for this workspace")
async def debug_off(svc: Svc, who: Writer, contact_id: str) -> dict[str, Any]:
    contact = _contact(contact_id)
    owners = svc.keys.debug_owners(contact)
    if await svc.client.srem(owners, who.workspace) and not await svc.client.scard(owners):
        await svc.client.delete(svc.keys.debug_flag(contact))
        if await svc.client.scard(owners):  # another workspace claimed it meanwhile: restore
            await svc.client.set(svc.keys.debug_flag(contact), "1")
    return {"contactId": contact_id, "enabled": False}


def start_cursor(last_event_id: str | None, after: str | None) -> str:
    """Where the stream resumes: after ``Last-Event-ID``, else ``after`` (``0-0`` replays what
    the stream holds), else only new entries (``$``)."""
    cursor = last_event_id or after or "$"
    if cursor != "$" and not STREAM_ID.match(cursor):
        raise Invalid("Last-Event-ID / after: a stream entry id like 1700000000000-0",
                      code=ApiCode.INVALID_EVENT_ID)
    return cursor


def sse_frame(entry_id: str, data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    try:
        text = json.dumps(json.loads(text), ensure_ascii=False)  # one line
    except ValueError:
        text = json.dumps({"raw": text})
    return f"id: {entry_id}\nevent: debug\ndata: {text}\n\n"


async def debug_frames(lease: Lease, stream: str, cursor: str,
                       workspace: str) -> AsyncIterator[str]:
    """The stream's entries after ``cursor``; another workspace's events are left out (a
    contact talks to every workspace's tools), but their ids still advance the client.

    Reads go through the lease's own pool, whose socket timeout outlasts the heartbeat's
    block, so an idle stream stays open with a keep-alive every ``HEARTBEAT_MS``; a read
    that still fails (Valkey restarting) is logged in one line and retried."""
    visible = scope.DebugScope(workspace)
    client = lease.client
    if cursor == "$":
        # Resolve "$" once, so the first reconnect resumes from a real id, never skips.
        last = await client.xrevrange(stream, count=1)
        cursor = last[0][0].decode() if last else "0-0"
    yield f"retry: 1000\nid: {cursor}\nevent: ready\ndata: {{}}\n\n"
    renewed = time.monotonic()
    while True:
        try:
            reply = await client.xread({stream: cursor}, count=100, block=HEARTBEAT_MS)
        except (RedisTimeoutError, RedisConnectionError) as exc:
            log.info("live debug read interrupted; retrying", error=exc.__class__.__name__)
            await asyncio.sleep(1)  # Valkey is away: do not spin
            reply = None
        # Renewed once a heartbeat, busy or idle: a stream fed an event more often than that
        # must stay counted against its key's and workspace's caps (its lease would lapse).
        if not reply or time.monotonic() - renewed >= HEARTBEAT_MS / 1000:
            await lease.renew()
            renewed = time.monotonic()
        if not reply:
            yield ": keep-alive\n\n"
            continue
        for _name, entries in reply:
            for raw_id, fields in entries:
                cursor = raw_id.decode()
                data = fields.get(b"data", b"{}")
                if visible.allows(data):
                    yield sse_frame(cursor, data)
                else:
                    yield f"id: {cursor}\nevent: skipped\ndata: {{}}\n\n"


@router.get("/debug/{contact_id}/stream", responses=answers(429),
            summary="Server-sent events from stream:debug:{contactId}; resumes from Last-Event-ID",
            response_class=StreamingResponse)
async def debug_stream(svc: Svc, who: Caller, contact_id: str,
                       last_event_id: Annotated[str | None, Header()] = None,
                       after: Annotated[str | None, Query()] = None) -> StreamingResponse:
    cursor = start_cursor(last_event_id, after)
    stream = svc.keys.debug(_contact(contact_id))
    held = AsyncExitStack()  # the lease lives as long as the response's body
    lease = await held.enter_async_context(svc.held.hold(who.key_id, who.workspace))

    async def body() -> AsyncIterator[str]:
        async with held:
            async for frame in debug_frames(lease, stream, cursor, who.workspace):
                yield frame

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
