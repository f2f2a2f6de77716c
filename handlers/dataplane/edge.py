"""The shared gate in front of limited upstreams: rate and concurrency limits and circuit
breakers held in Valkey, so every worker sees the same ones (runtime/edge.py decides which
apply; ``Gate`` is its protocol).

One script call lets a call through or says why not (``lua/edge_enter.lua``: the circuit,
the workspaces' fair shares, the slots, a GCRA token bucket), one gives its slot back and
tells the circuit how the upstream did (``lua/edge_leave.lua``), and that one is sent only
when there is something to tell: a slot, the half-open probe, or a failure. A call to an
upstream with neither limits nor a breaker never comes here.

Keys, per scope (an integration server, or an origin of ``CHATFLOW_ORIGIN_LIMITS``), all in
one hash slot (``{edge:<kind>:<name>}``), so a cluster runs each script on one node.
Turns are reserved ahead where the limit allows (the caller sleeps until its turn, no
second round trip); a call that finds every slot taken asks again after a short, growing,
jittered pause, within its own budget. A slot's lease is the claim window
(``CHATFLOW_CLAIM_IDLE_MS``), renewed by the live worker with its stream leases, so a dead
worker's slots come back within one claim window.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from redis.exceptions import NoScriptError

from chatflow.runtime import errors
from chatflow.runtime.edge import EdgeScope, Ticket
from chatflow.runtime.events import iso
from chatflow.schemas.edge import CircuitBreakerPolicy

from ..keys import Keys
from ..operations import metrics
from ..redis_client import Client, Command, send_all
from .store import LuaScript

log = structlog.get_logger("chatflow.edge")

ENTER = LuaScript("edge_enter")
LEAVE = LuaScript("edge_leave")
RENEW = LuaScript("edge_renew")
EDGE_SCRIPTS = (ENTER, LEAVE, RENEW)
GO, BUSY, LATER, OPEN = 0, 1, 2, 3
_POLL_MIN_MS, _POLL_MAX_MS = 10, 200


@dataclass(frozen=True, slots=True)
class _ScopeKeys:
    rate: str
    slots: str
    circuit: str
    failures: str
    active: str
    ws_rate: str
    ws_slots: str


def scope_keys(keys: Keys, scope: EdgeScope) -> _ScopeKeys:
    tag = f"{keys.prefix}{{edge:{scope.kind}:{scope.name}}}"
    ws = scope.workspace if scope.kind == "origin" else "-"
    return _ScopeKeys(f"{tag}:rate", f"{tag}:slots", f"{tag}:circuit", f"{tag}:failures",
                      f"{tag}:active", f"{tag}:ws:{ws}:rate", f"{tag}:ws:{ws}:slots")


def _limit_text(scope: EdgeScope) -> str:
    limits = scope.limits
    if limits is None:
        return "sem limites"
    parts = []
    if limits.requestsPerSecond is not None:
        parts.append(f"requestsPerSecond={limits.requestsPerSecond:g}, "
                     f"burst={limits.effective_burst}")
    if limits.maxConcurrent is not None:
        parts.append(f"maxConcurrent={limits.maxConcurrent}")
    return ", ".join(parts)


class SharedGate:
    """:class:`chatflow.runtime.edge.Gate` on Valkey."""

    def __init__(self, client: Client, keys: Keys, *, lease_ms: int,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.client = client
        self.keys = keys
        self.lease_ms = lease_ms
        self.sleep = sleep
        # Slots and probes held now, by scope: renewed with the stream leases.
        self._held: dict[EdgeScope, set[str]] = {}
        # Circuits this process used (their label and key): read at scrape time.
        self._circuits: dict[str, str] = {}
        self._asked: list[tuple[LuaScript, Command, asyncio.Future[Any]]] = []
        self._sender: asyncio.Task[None] | None = None
        self._leaving: set[asyncio.Task[None]] = set()  # releases of cancelled calls

    async def _script(self, script: LuaScript, keys: list[str], args: list[Any]) -> Any:
        """One script call, sent with every other asked in the same loop turn: under load a
        worker has hundreds of calls at the gate, and a round trip (and a pool connection)
        each would exhaust the pool (as the answered checks would: handlers/dataplane/steps.py
        ``AnsweredChecks``)."""
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._asked.append((script, script.command(keys, args), answer))
        if self._sender is None or self._sender.done():
            # Started on the next loop turn, so the calls asked in this one share its write.
            self._sender = asyncio.create_task(self._send())
        return await answer

    async def _send(self) -> None:
        asked: list[tuple[LuaScript, Command, asyncio.Future[Any]]] = []
        try:
            while self._asked:
                asked, self._asked = self._asked, []
                try:
                    replies = await self._replies([(s, c) for s, c, _ in asked])
                except Exception as exc:  # the calls fail as their own would have
                    for _, _, answer in asked:
                        if not answer.done():
                            answer.set_exception(exc)
                    continue
                for (_, _, answer), reply in zip(asked, replies, strict=True):
                    if answer.done():
                        continue
                    if isinstance(reply, Exception):
                        answer.set_exception(reply)
                    else:
                        answer.set_result(reply)
        finally:  # cancelled (the worker stops): nobody is left waiting
            for _, _, answer in [*asked, *self._asked]:
                if not answer.done():
                    answer.cancel()
            self._asked = []

    async def _replies(self, calls: list[tuple[LuaScript, Command]]) -> list[Any]:
        """Each call's reply (an error reply in its place); a script Valkey does not know
        (first use, or a restart) is loaded and only its calls are sent again: every other
        call of the batch ran, and must not run twice."""
        replies = await send_all(self.client, [c for _, c in calls], raise_errors=False)
        missing = [i for i, r in enumerate(replies) if isinstance(r, NoScriptError)]
        if missing:
            for script in {calls[i][0] for i in missing}:
                await self.client.script_load(script.source)
            again = await send_all(self.client, [calls[i][1] for i in missing],
                                   raise_errors=False)
            for i, reply in zip(missing, again, strict=True):
                replies[i] = reply
        return replies

    async def load_scripts(self) -> None:
        """Load the gate's scripts (worker start, and after Valkey lost them)."""
        for script in EDGE_SCRIPTS:
            await self.client.script_load(script.source)

    async def enter(self, scope: EdgeScope, budget_ms: int) -> Ticket:
        k = scope_keys(self.keys, scope)
        limits, breaker = scope.limits, scope.breaker
        rps = limits.requestsPerSecond if limits and limits.requestsPerSecond else 0
        burst = limits.effective_burst if limits else 1
        maxc = limits.maxConcurrent if limits and limits.maxConcurrent else 0
        if breaker is not None:
            self._circuits.setdefault(scope.label, k.circuit)
        holder = uuid.uuid4().hex
        started = time.monotonic()
        pause = _POLL_MIN_MS
        waited = False
        while True:
            left = budget_ms - int((time.monotonic() - started) * 1000)
            verdict, ms, probe, moved, slots = (int(x) for x in await self._script(
                ENTER, [k.rate, k.slots, k.circuit, k.active, k.ws_rate, k.ws_slots],
                [holder, self.lease_ms, rps, burst, maxc, int(breaker is not None),
                 max(0, left), int(scope.kind == "origin"), scope.workspace]))
            if verdict == GO:
                ticket = Ticket(holder, slot=slots, probe=bool(probe))
                if moved:
                    metrics.circuit_moved(scope.label, "half_open")
                if ticket.slot or ticket.probe:
                    self._held.setdefault(scope, set()).add(holder)
                if ms > 0:
                    waited = True
                    try:
                        await self.sleep(ms / 1000)
                    except BaseException:  # cancelled while waiting for its turn
                        self._abandon(scope, ticket)
                        raise
                if waited:
                    metrics.rate_limit_waited()
                ticket.waited_ms = int((time.monotonic() - started) * 1000)
                return ticket
            if verdict == OPEN:  # its third slot is then the circuit's failure count
                assert breaker is not None
                raise errors.circuit_open(scope.target, probe or breaker.failureThreshold,
                                          breaker.windowMs, ms)
            # BUSY: every slot taken; LATER: the next turn is further than this call may wait
            # (or, shared, further than one interval: ask again then).
            hint = ms if verdict == LATER else pause
            if (verdict == LATER and scope.kind != "origin") or hint > left:
                raise errors.rate_limited(scope.target, _limit_text(scope))
            waited = True
            pause = min(_POLL_MAX_MS, pause * 2)
            await self.sleep(min(left, hint * (1 + random.random() / 2)) / 1000)

    def _abandon(self, scope: EdgeScope, ticket: Ticket) -> None:
        """Give back what a cancelled call took, without awaiting in its cancelled task: no
        longer renewed, its slot is released in the background (or ends with its lease)."""
        self._forget(scope, ticket)
        if ticket.slot or ticket.probe:
            task = asyncio.get_running_loop().create_task(self.leave(scope, ticket, None))
            self._leaving.add(task)
            task.add_done_callback(self._leaving.discard)

    def _forget(self, scope: EdgeScope, ticket: Ticket) -> None:
        held = self._held.get(scope)
        if held is not None:
            held.discard(ticket.holder)
            if not held:
                del self._held[scope]

    async def leave(self, scope: EdgeScope, ticket: Ticket, failed: bool | None) -> None:
        self._forget(scope, ticket)
        breaker = scope.breaker
        if not (ticket.slot or ticket.probe or (breaker is not None and failed)):
            return  # nothing to give back, nothing the circuit counts: no round trip
        k = scope_keys(self.keys, scope)
        outcome = -1 if failed is None else int(failed)
        moved = await self._script(LEAVE, [k.slots, k.ws_slots, k.circuit, k.failures], [
            ticket.holder, outcome, int(breaker is not None),
            breaker.failureThreshold if breaker else 0, breaker.windowMs if breaker else 0,
            breaker.cooldownMs if breaker else 0, int(ticket.probe), ticket.slot])
        to = moved.decode() if isinstance(moved, bytes) else str(moved or "")
        if to:
            metrics.circuit_moved(scope.label, to)
            log.warning("circuit moved", scope=scope.target, to=to)

    async def renew(self) -> None:
        """Renew the slots and probes held now (the worker's lease loop calls this)."""
        if not self._held:
            return
        commands = []
        for scope, holders in list(self._held.items()):
            k = scope_keys(self.keys, scope)
            commands.append(RENEW.command([k.slots, k.ws_slots, k.circuit],
                                          [self.lease_ms, *holders]))
        await self._replies([(RENEW, command) for command in commands])

    async def refresh(self) -> None:
        """``chatflow_circuit_state`` of every circuit this process used, read from Valkey
        (its state is shared: every worker reports the same)."""
        if not self._circuits:
            return
        labels = list(self._circuits)
        states = await send_all(self.client, [("HGET", self._circuits[label], "state")
                                              for label in labels])
        for label, state in zip(labels, states, strict=True):
            text = state.decode() if isinstance(state, bytes) else str(state or "closed")
            metrics.circuit_seen(label, text or "closed")


async def circuit_view(client: Client, keys: Keys, server_id: str,
                       breaker: CircuitBreakerPolicy | None) -> dict[str, Any]:
    """An integration server's circuit as the API shows it: ``{state, failures, openedAt}``
    (``openedAt`` ISO 8601, or None). A server without a breaker is always closed."""
    if breaker is None:
        return {"state": "closed", "failures": 0, "openedAt": None}
    k = scope_keys(keys, EdgeScope("server", server_id, "default", None, breaker))
    t = await client.time()
    now = int(t[0]) * 1000 + int(t[1]) // 1000
    raw, recent = await send_all(client, [
        ("HGETALL", k.circuit), ("ZCOUNT", k.failures, now - breaker.windowMs, "+inf")])
    fields = {_text(a): _text(b) for a, b in (raw or {}).items()} if isinstance(raw, dict) \
        else _pairs(raw)
    state = fields.get("state") or "closed"
    opened = fields.get("openedAt")
    failures = int(fields["failures"]) if state != "closed" and fields.get("failures") \
        else int(recent or 0)
    return {"state": state, "failures": failures,
            "openedAt": iso(int(float(opened))) if opened and state != "closed" else None}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _pairs(raw: Any) -> dict[str, str]:
    items = list(raw or [])
    return {_text(items[i]): _text(items[i + 1]) for i in range(0, len(items) - 1, 2)}


__all__ = ["EDGE_SCRIPTS", "SharedGate", "circuit_view", "scope_keys"]
