"""The edge of a call: idempotency keys, and the gate of rate, concurrency and circuit that
an integration server (``limits``, ``circuitBreaker``) or an origin of
``CHATFLOW_ORIGIN_LIMITS`` puts in front of its requests.

What is decided here needs no I/O: the key of an attempt, which limits apply to a call, and
which outcome counts as the upstream failing. The shared state (token buckets, slots,
circuits) lives in Valkey, behind the :class:`Gate` protocol the handlers implement
(handlers/dataplane/edge.py); a call without limits or breaker never reaches it, so a
definition without these fields costs nothing more.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from chatflow.schemas.definition import format_validation_error
from chatflow.schemas.edge import (
    DEFAULT_IDEMPOTENCY_HEADER,
    CircuitBreakerPolicy,
    OriginLimits,
    RetryPolicy,
    ServerLimits,
    header_name,
)

from .errors import ErrorCode, ToolFailure
from .outbound import MAX_REDIRECTS, CutShort, Outbound, Reply
from .retry import MIN_ATTEMPT_MS
from .state import ExecState


def upstream_failed(failure: ToolFailure, *, at_deadline: bool) -> bool | None:
    """How a request that raised counts for a circuit (one answered counts when its status
    is 5xx: :meth:`Gated.exchange`): True when the upstream failed (no connection, or no
    answer within the block's timeout), None when the failure says nothing about the
    upstream (a refused URL, a body over its cap, a cancelled tree...). A timeout does not
    count when this worker cut it short: it waited for a connection of its own pool
    (:class:`CutShort`), or its time ended at the tree's deadline (``at_deadline``). Local
    overload, or a tree already late, must not open a healthy upstream's circuit."""
    if failure.code == ErrorCode.HTTP_ERROR:
        return True
    if failure.code == ErrorCode.HTTP_TIMEOUT:
        return None if at_deadline or isinstance(failure, CutShort) else True
    return None


def idempotency_key(state: ExecState) -> str:
    """The key of the call the current block of ``state`` makes: its execution (whose id
    carries the root's), the block and its visit (``hops`` counts the blocks the execution
    went through, so a loop back to the block is a new visit). The same for every attempt
    and after a redelivery; another visit, another key."""
    raw = f"{state.execId}\n{state.block}\n{state.hops}".encode()
    return hashlib.sha256(raw).hexdigest()[:32]


def with_key(headers: dict[str, str], method: str, header: str | None,
             state: ExecState) -> dict[str, str]:
    """``headers`` plus the idempotency key of ``state``'s call, for a non-GET request,
    unless the header is off (None) or already set by the definition (its value wins). A GET
    computes no key."""
    if header is None or method.upper() == "GET":
        return headers
    wanted = header.lower()
    if any(name.lower() == wanted for name in headers):
        return headers
    return {**headers, header: idempotency_key(state)}


@dataclass(frozen=True, slots=True)
class EdgeScope:
    """What a call is limited by: an integration server's limits and breaker, or an
    origin's (shared by the workspaces that call it, fairly: ``workspace``)."""

    kind: Literal["server", "origin"]
    name: str
    workspace: str
    limits: ServerLimits | None
    breaker: CircuitBreakerPolicy | None

    @property
    def target(self) -> str:
        """How messages name it (``serverId=s1``, ``origin=https://api.example.com``)."""
        return f"serverId={self.name}" if self.kind == "server" else f"origin={self.name}"

    @property
    def label(self) -> str:
        """Its metrics label: a server's id, an origin as written."""
        return self.name


@dataclass(slots=True)
class Ticket:
    """A call let through: its holder id (a concurrency slot, a failure's mark), the slots
    it holds (0 none, 1 one, 2 one in its workspace's share too), whether it is the
    circuit's half-open probe, and how long it waited for its turn."""

    holder: str
    slot: int = 0
    probe: bool = False
    waited_ms: int = 0


class Gate(Protocol):
    """The shared gate (handlers/dataplane/edge.py)."""

    async def enter(self, scope: EdgeScope, budget_ms: int) -> Ticket:
        """Wait for a turn for at most ``budget_ms``; raises ToolFailure ``rate_limited``
        when none comes in time, ``circuit_open`` while the circuit is open."""
        ...

    async def leave(self, scope: EdgeScope, ticket: Ticket, failed: bool | None) -> None:
        """The call ended: its slot back; ``failed`` True (the upstream failed), False (it
        answered), None (the call never reached it) for the circuit."""
        ...


@dataclass(frozen=True, slots=True)
class ServerEdge:
    """An integration server's extensions, as its cache config holds them."""

    retry: RetryPolicy | None = None
    limits: ServerLimits | None = None
    breaker: CircuitBreakerPolicy | None = None
    idempotency_header: str | None = DEFAULT_IDEMPOTENCY_HEADER

    def scope(self, server_id: str, workspace: str) -> EdgeScope | None:
        if self.limits is None and self.breaker is None:
            return None
        return EdgeScope("server", server_id, workspace, self.limits, self.breaker)


_PLAIN = ServerEdge()
_EDGE_FIELDS = ("retry", "limits", "circuitBreaker", "idempotencyHeader")


def server_edge(server_id: str, config: Mapping[str, Any]) -> ServerEdge | ToolFailure:
    """The extensions of a server's cache config; ``endpoint_server_invalid`` naming the
    field when one does not fit (a config written by hand)."""
    if not any(name in config for name in _EDGE_FIELDS):
        return _PLAIN
    try:
        retry = config.get("retry")
        limits = config.get("limits")
        breaker = config.get("circuitBreaker")
        return ServerEdge(
            RetryPolicy.model_validate(retry) if retry is not None else None,
            ServerLimits.model_validate(limits) if limits is not None else None,
            CircuitBreakerPolicy.model_validate(breaker) if breaker is not None else None,
            header_name(config.get("idempotencyHeader", DEFAULT_IDEMPOTENCY_HEADER)))
    except (ValidationError, ValueError, TypeError) as exc:
        return ErrorCode.ENDPOINT_SERVER_INVALID.failure(_first_problem(exc), server=server_id)


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return format_validation_error(exc)[0]
    return str(exc)


def origin_scope(origins: Mapping[str, OriginLimits], origin: str,
                 workspace: str) -> EdgeScope | None:
    """The scope of a plain httpCall to ``origin``, when CHATFLOW_ORIGIN_LIMITS names it."""
    spec = origins.get(origin)
    if spec is None:
        return None
    return EdgeScope("origin", origin, workspace, spec.limits(), spec.circuitBreaker)


class Gated:
    """An Outbound's ``exchange`` behind a gate: each request waits for its turn
    while the tree's deadline allows (``remaining_ms`` from now, less the time an attempt
    needs), then gets its own timeout, capped at what is left; its outcome is told to the
    circuit. ``remaining_ms`` None: a call outside any tree (a person's Test call), whose
    request's own timeout bounds its wait too."""

    def __init__(self, outbound: Outbound, gate: Gate, scope: EdgeScope,
                 remaining_ms: int | None) -> None:
        self.outbound = outbound
        self.gate = gate
        self.scope = scope
        self.deadline = None if remaining_ms is None else time.monotonic() + remaining_ms / 1000

    async def exchange(self, method: str, url: str, *, headers: dict[str, str],
                       content: str | bytes | None, timeout_s: float,
                       max_bytes: int | None = None, max_redirects: int = MAX_REDIRECTS,
                       secret_headers: Collection[str] = (), traced: bool = True) -> Reply:
        until = self.deadline if self.deadline is not None else time.monotonic() + timeout_s
        budget_ms = int((until - time.monotonic()) * 1000) - MIN_ATTEMPT_MS
        ticket = await self.gate.enter(self.scope, max(0, budget_ms))
        failed: bool | None = None
        now = time.monotonic()
        # The request's time ends at the tree's deadline (its block capped it there, or the
        # wait for a turn did): a timeout then is the tree's, not the upstream's.
        at_deadline = self.deadline is not None and now + timeout_s >= self.deadline
        try:
            reply = await self.outbound.exchange(
                method, url, headers=headers, content=content,
                timeout_s=max(0.001, min(timeout_s, until - now)), max_bytes=max_bytes,
                max_redirects=max_redirects, secret_headers=secret_headers, traced=traced)
            failed = reply.status >= 500
            return reply
        except ToolFailure as failure:
            failed = upstream_failed(failure, at_deadline=at_deadline)
            raise
        finally:
            await self.gate.leave(self.scope, ticket, failed)


@dataclass(frozen=True, slots=True)
class Edge:
    """What the executors that call out are handed: the shared gate, and the origins an
    operator limited (``CHATFLOW_ORIGIN_LIMITS``; plain httpCall only)."""

    gate: Gate
    origins: Mapping[str, OriginLimits]


__all__ = ["Edge", "EdgeScope", "Gate", "Gated", "ServerEdge", "Ticket", "idempotency_key",
           "origin_scope", "server_edge", "upstream_failed", "with_key"]
