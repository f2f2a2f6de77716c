"""callEndpoint: call a registered IntegrationEndpoint, as a tool block or a flow action.

The server comes from the cache projection ``integration:server:{serverId}``
(headers already decrypted, endpoints included), read through a
:class:`ServerSource`; the runtime never reads the registry itself. URL, headers
and body are built by :func:`runtime.registry.endpoints.prepare_request`; the
response and error variables behave exactly as in httpCall.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from chatflow.schemas.definition import CallEndpointBlock, CallEndpointParamMapping

from ..edge import Gate, Gated, server_edge, with_key
from ..errors import ErrorCode, ToolFailure
from ..interpolation import lookup, render
from ..limits import Limits
from ..origins import misplaced_secrets, origin_of
from ..outbound import Outbound
from ..outcome import BlockOutcome
from ..registry.endpoints import as_text, prepare_request
from ..state import ExecState
from ..tenancy import usable
from .common import remaining_ms
from .http import body_failure, decode_body, response_writes


class ServerSource(Protocol):
    """Where integration servers are read from (``integration:server:{serverId}``)."""

    async def get_server(self, server_id: str) -> bytes | None: ...


@dataclass(slots=True)
class EndpointCall:
    """What one call did: the status and decoded body, or the failure."""

    method: str = ""
    url: str = ""
    status: int | None = None
    body: Any = None
    error: ToolFailure | None = None
    duration_ms: int = 0
    request: dict[str, Any] = field(default_factory=dict)
    # The response's headers, for a test call to show (a run reads only status and body).
    headers: Mapping[str, str] = field(default_factory=dict)


def server_not_found(server_id: str) -> ToolFailure:
    return ErrorCode.ENDPOINT_SERVER_NOT_FOUND.failure(server=server_id)


def endpoint_not_found(server_id: str, endpoint_id: str) -> ToolFailure:
    return ErrorCode.ENDPOINT_NOT_FOUND.failure(endpoint=endpoint_id, server=server_id)


def secret_origin_refused(endpoint_id: str, url: str, names: list[str]) -> ToolFailure:
    return ErrorCode.SECRET_ORIGIN_MISMATCH.failure(
        "salve-os de novo para esta baseUrl", what=f"endpoint {endpoint_id}",
        saved="outra origem", target=origin_of(url), secrets=f"headers {', '.join(names)}")


def parse_server(server_id: str, raw: bytes | str | None) -> dict[str, Any] | ToolFailure:
    if raw is None:
        return server_not_found(server_id)
    try:
        config = json.loads(raw)
    except ValueError:
        config = None
    if not isinstance(config, dict) or not isinstance(config.get("endpoints"), dict):
        return ErrorCode.ENDPOINT_SERVER_INVALID.failure(server=server_id)
    return config


def _value(template: str, variables: Mapping[str, Any], context: Mapping[str, Any],
           cap: int) -> Any:
    token = template.strip()
    if token.startswith("{{") and token.endswith("}}") and token.count("{{") == 1:
        return lookup(token[2:-2].strip(), variables, context)
    return render(template, variables, context, max_chars=cap)


async def call_endpoint(
    http: Outbound | Gated, server: dict[str, Any] | ToolFailure, server_id: str,
    endpoint_id: str, mappings: list[CallEndpointParamMapping],
    variables: Mapping[str, Any], context: Mapping[str, Any], *, timeout_ms: int, max_chars: int,
    key: tuple[str | None, ExecState] | None = None,
) -> EndpointCall:
    """``key``: the idempotency header (None: off) and the state whose call's key a non-GET
    request carries."""
    started = time.perf_counter()
    call = EndpointCall()
    if isinstance(server, ToolFailure):
        call.error = server
        return call
    endpoint = server["endpoints"].get(endpoint_id)
    if not isinstance(endpoint, dict):
        call.error = endpoint_not_found(server_id, endpoint_id)
        return call
    params: list[tuple[str, str, Any]] = []
    for m in mappings:
        value = _value(m.value, variables, context, max_chars)
        params.append((m.name, m.in_, value if m.in_ == "body" else as_text(value)))
    try:
        request = prepare_request(server, endpoint, params)
    except ValueError as exc:
        call.error = ErrorCode.ENDPOINT_BODY_INVALID.failure(endpoint=endpoint_id, cause=exc)
        return call
    call.method, call.url = request.method, request.url
    misplaced = misplaced_secrets(request.url, request.secret_origins)
    if misplaced:
        call.error = secret_origin_refused(endpoint_id, request.url, misplaced)
        return call
    headers = request.headers if key is None else with_key(request.headers, request.method, *key)
    try:
        reply = await http.exchange(
            request.method, request.url, headers=headers,
            content=request.content, timeout_s=timeout_ms / 1000,
            secret_headers=request.secret_origins)
    except ToolFailure as failure:
        call.error = body_failure(failure)
    else:
        status = reply.status
        call.status, call.body = status, decode_body(reply.body, reply.content_type)
        call.headers = reply.headers
        if status >= 400:
            call.error = ErrorCode.HTTP_STATUS.failure(method=request.method, url=request.url,
                                                       status=status)
    call.duration_ms = int((time.perf_counter() - started) * 1000)
    return call


class CallEndpointExecutor:
    """The callEndpoint block; register with ``BlockRunner.register("callEndpoint", ...)``."""

    def __init__(self, http: Outbound, servers: ServerSource, limits: Limits,
                 gate: Gate | None = None) -> None:
        """``gate``: where a server's ``limits`` and ``circuitBreaker`` are held
        (runtime/edge.py); without one they are not applied."""
        self.http = http
        self.servers = servers
        self.limits = limits
        self.gate = gate

    async def __call__(self, state: ExecState, block: CallEndpointBlock,
                       now_ms: int) -> BlockOutcome:
        raw = usable(await self.servers.get_server(block.serverId), state.root.workspace)
        server = parse_server(block.serverId, raw)
        # The server's extensions: its default retry, limits, breaker and key header.
        edge = server_edge(block.serverId, server) if isinstance(server, dict) else None
        if isinstance(edge, ToolFailure):
            server, edge = edge, None
        sender: Outbound | Gated = self.http
        scope = edge.scope(block.serverId, state.root.workspace) if edge else None
        if scope is not None and self.gate is not None:
            sender = Gated(self.http, self.gate, scope, remaining_ms(state, now_ms))
        key = (edge.idempotency_header, state) if edge else None
        call = await call_endpoint(
            sender, server, block.serverId, block.endpointId, block.paramMappings,
            state.variables, state.context,
            timeout_ms=min(self.limits.http_timeout_ms, remaining_ms(state, now_ms)),
            max_chars=self.limits.max_rendered_chars, key=key)
        debug: dict[str, Any] = {"url": call.url, "method": call.method}
        retry_after = None
        if call.status is not None:
            debug["status"] = call.status
            if call.status >= 400:
                retry_after = call.headers.get("retry-after")
        return BlockOutcome(writes=response_writes(block, call.status, call.body), error=call.error,
                            debug=debug, duration_ms=call.duration_ms,
                            retry=block.retry or (edge.retry if edge else None),
                            retry_after=retry_after)


async def run_call_endpoint_action(
    http: Outbound, servers: ServerSource, action: Mapping[str, Any],
    variables: Mapping[str, Any], context: Mapping[str, Any] | None = None,
    limits: Limits | None = None, workspace: str = "default",
) -> dict[str, Any]:
    """The flow's ``callEndpoint`` action (CallEndpointAction): the call plus the variable
    writes the flow applies, with onError/errorVariable as for the block.

    Returns ``{"ok", "status", "body", "variables", "error", "next"}``.
    """
    limits = limits or Limits()
    server_id, endpoint_id = str(action["serverId"]), str(action["endpointId"])
    mappings = [CallEndpointParamMapping.model_validate(m)
                for m in action.get("paramMappings") or []]
    server = parse_server(server_id, usable(await servers.get_server(server_id), workspace))
    call = await call_endpoint(http, server, server_id, endpoint_id, mappings, variables,
                               context or {}, timeout_ms=limits.http_timeout_ms,
                               max_chars=limits.max_rendered_chars)
    writes: dict[str, Any] = {}
    outputs = (("responseStatusVariable", call.status), ("responseBodyVariable", call.body))
    for key, value in outputs:
        if action.get(key):
            writes[str(action[key])] = value if value is not None else ""
    error = None
    next_ = "continue"
    if call.error is not None:
        error = {"code": call.error.code, "message": call.error.message}
        if action.get("onError", "blocking") == "continue":
            if action.get("errorVariable"):
                writes[str(action["errorVariable"])] = call.error.message
        else:
            handoff = action.get("errorHandoff", True) is not False
            next_ = "handoff" if handoff else "defaultException"
    return {"ok": call.error is None, "status": call.status, "body": call.body,
            "url": call.url, "method": call.method, "variables": writes, "error": error,
            "next": next_, "durationMs": call.duration_ms}
