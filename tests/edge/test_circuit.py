"""A circuit breaker per integration server and per origin (SPEC: ``circuitBreaker``): a
down upstream opens it, later calls answer ``circuit_open`` in milliseconds and reach
nothing, one probe after the cooldown closes it again. State shared through Valkey."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest

from chatflow.handlers.dataplane.edge import circuit_view
from chatflow.handlers.operations.metrics import REGISTRY
from chatflow.runtime.edge import EdgeScope, Gated
from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.origins import origin_of
from chatflow.schemas.edge import CircuitBreakerPolicy
from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer, Reply, Request, json_reply

from .support import Counting, endpoint_tool, put_server

BREAKER = {"failureThreshold": 3, "windowMs": 10_000, "cooldownMs": 1_000}


async def _until_ok(h: Harness, pt: str, timeout_s: float) -> tuple[int, float]:
    """Run ``pt`` until it answers ok; how many runs answered circuit_open, and when the
    first ok came (monotonic)."""
    refused = 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = await h.run(pt)
        if result.ok:
            return refused, time.monotonic()
        assert result.error is not None and result.error.code == "circuit_open", result
        refused += 1
    raise TimeoutError("the circuit never closed")


async def test_a_down_server_opens_its_circuit_and_a_probe_after_the_cooldown_closes_it(
        harness: Harness, http_server: LoopbackServer) -> None:
    upstream = Counting(hold_s=1.0, status=503)  # down, and slow to say so
    http_server.route("GET", "/call", upstream)
    await put_server(harness, "srv", http_server.base, circuitBreaker=BREAKER)
    await harness.put_tool("pt", endpoint_tool("srv"))
    breaker = CircuitBreakerPolicy.model_validate(BREAKER)
    for _ in range(3):
        result = await harness.run("pt")
        assert result.error is not None and result.error.code == "http_status", result
        assert result.durationMs >= 1000  # each failure cost its caller the upstream's second
    opened = time.monotonic()
    refused = await harness.run("pt")
    assert refused.error is not None and refused.error.code == "circuit_open", refused
    assert refused.error.message.startswith("circuito aberto: serverId=srv (3 falhas em 10s)")
    assert len(upstream.times) == 3  # the refused call reached nothing...
    assert refused.durationMs < 1000, refused  # ...and did not wait what a call costs
    upstream.hold_s = 0
    circuit = await circuit_view(harness.client, harness.keys, "srv", breaker)
    assert (circuit["state"], circuit["failures"]) == ("open", 3), circuit
    assert circuit["openedAt"], circuit

    upstream.status = 200  # the upstream recovers
    _refused, closed_at = await _until_ok(harness, "pt", timeout_s=10)
    assert closed_at - opened >= 0.9  # the cooldown, less what it took to see it open
    assert len(upstream.times) == 4  # one probe, which succeeded
    circuit = await circuit_view(harness.client, harness.keys, "srv", breaker)
    assert circuit == {"state": "closed", "failures": 0, "openedAt": None}, circuit
    result = await harness.run("pt")
    assert result.ok and len(upstream.times) == 5


async def test_a_failed_probe_opens_the_circuit_again(
        harness: Harness, http_server: LoopbackServer) -> None:
    upstream = Counting(status=503)
    http_server.route("GET", "/call", upstream)
    await put_server(harness, "srv", http_server.base, circuitBreaker=BREAKER)
    await harness.put_tool("pt", endpoint_tool("srv"))
    breaker = CircuitBreakerPolicy.model_validate(BREAKER)
    for _ in range(3):
        await harness.run("pt")
    first = await circuit_view(harness.client, harness.keys, "srv", breaker)
    deadline = time.monotonic() + 10
    while len(upstream.times) == 3:  # refused until the cooldown ends, then the probe
        assert time.monotonic() < deadline
        await harness.run("pt")
    again = await circuit_view(harness.client, harness.keys, "srv", breaker)
    assert again["state"] == "open" and again["openedAt"] > first["openedAt"], (first, again)
    refused = await harness.run("pt")
    assert refused.error is not None and refused.error.code == "circuit_open"
    assert len(upstream.times) == 4


TWO = {"failureThreshold": 2, "windowMs": 10_000, "cooldownMs": 60_000}


def _closed_port() -> int:
    """A loopback port nobody listens on: bound, then closed (a connection is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_refused_connections_open_the_circuit(harness: Harness) -> None:
    await put_server(harness, "srv-refused", f"http://127.0.0.1:{_closed_port()}",
                     circuitBreaker=TWO)
    await harness.put_tool("pt", endpoint_tool("srv-refused"))
    codes = [(await harness.run("pt")).error for _ in range(3)]
    assert [e.code if e else None for e in codes] == ["http_error", "http_error",
                                                      "circuit_open"], codes
    assert codes[2] is not None and "serverId=srv-refused (2 falhas" in codes[2].message
    circuit = await circuit_view(harness.client, harness.keys, "srv-refused",
                                 CircuitBreakerPolicy.model_validate(TWO))
    assert (circuit["state"], circuit["failures"]) == ("open", 2), circuit


class Hanging:
    """Never answers while the test runs (released at its end); counts the requests."""

    def __init__(self) -> None:
        self.arrived = 0
        self.came = threading.Event()  # the first request is here
        self.lock = threading.Lock()
        self.release = threading.Event()

    def __call__(self, request: Request) -> Reply:
        with self.lock:
            self.arrived += 1
        self.came.set()
        self.release.wait(30)
        return json_reply({"late": True})


async def test_a_hanging_upstream_opens_the_circuit_through_its_timeouts(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    upstream = Hanging()
    http_server.route("GET", "/hang", upstream)
    origins = json.dumps({http_server.base: {"circuitBreaker": TWO}})
    h = Harness(redis_url, prefix, origin_limits=origins)
    try:
        await h.start_worker()
        await h.put_tool("pt", tool("h", http("h", http_server.base + "/hang", to("r"),
                                              timeoutMs=500), ret("r", "ok")))
        results = [await h.run("pt") for _ in range(3)]
    finally:
        upstream.release.set()
        await h.close()
    assert [r.error.code if r.error else None for r in results] == [
        "http_timeout", "http_timeout", "circuit_open"], results
    assert all(r.durationMs >= 500 for r in results[:2]), results  # each waited its timeout
    assert results[2].durationMs < 500, results[2]  # the third did not...
    assert upstream.arrived == 2  # ...and reached nothing


async def test_an_origin_s_circuit_guards_plain_http_calls(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    upstream = Counting(status=502)
    http_server.route("GET", "/x", upstream)
    origins = json.dumps({http_server.base: {"circuitBreaker": {
        "failureThreshold": 2, "windowMs": 10_000, "cooldownMs": 60_000}}})
    h = Harness(redis_url, prefix, origin_limits=origins)
    try:
        await h.start_worker()
        await h.put_tool("pt", tool("h", http("h", http_server.base + "/x", to("r")),
                                    ret("r", "ok")))
        codes = [(await h.run("pt")).error for _ in range(4)]
    finally:
        await h.close()
    assert [e.code if e else None for e in codes] == [
        "http_status", "http_status", "circuit_open", "circuit_open"], codes
    assert codes[2] is not None and f"origin={origin_of(http_server.base)} (2 falhas" \
        in codes[2].message, codes[2]
    assert len(upstream.times) == 2


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_the_circuit_s_transitions_and_shared_state_are_metrics(
        harness: Harness, http_server: LoopbackServer) -> None:
    upstream = Counting(status=503)
    http_server.route("GET", "/call", upstream)
    await put_server(harness, "srv-m", http_server.base, circuitBreaker=BREAKER)
    await harness.put_tool("pt", endpoint_tool("srv-m"))
    moves = {to: _sample("chatflow_circuit_transitions_total", server="srv-m", to=to)
             for to in ("open", "half_open", "closed")}
    for _ in range(3):
        await harness.run("pt")
    (worker,) = harness.workers
    await worker.gate.refresh()  # what a scrape does
    assert _sample("chatflow_circuit_state", server="srv-m") == 2
    upstream.status = 200
    await _until_ok(harness, "pt", timeout_s=10)
    await worker.gate.refresh()
    assert _sample("chatflow_circuit_state", server="srv-m") == 0
    assert {to: _sample("chatflow_circuit_transitions_total", server="srv-m", to=to) - n
            for to, n in moves.items()} == {"open": 1, "half_open": 1, "closed": 1}


async def test_timeouts_waiting_for_the_worker_s_own_pool_do_not_open_the_circuit(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    held = Hanging()
    http_server.route("GET", "/held", held)
    upstream = Counting()
    http_server.route("GET", "/call", upstream)
    # One connection in the pool, taken by a plain call the upstream holds: the server's
    # calls time out waiting for it (their 300 ms), reaching nothing. The server is healthy.
    h = Harness(redis_url, prefix, http_max_connections=1, http_timeout_ms=300,
                claim_idle_ms=60_000)
    breaker = {"failureThreshold": 1, "windowMs": 10_000, "cooldownMs": 60_000}
    try:
        await h.start_worker()
        await put_server(h, "srv-busy", http_server.base, circuitBreaker=breaker)
        await h.put_tool("pt", endpoint_tool("srv-busy"))
        await h.put_tool("pt-held", tool("h", http("h", http_server.base + "/held", to("r"),
                                                   timeoutMs=20_000), ret("r", "held")))
        holder = asyncio.create_task(h.run("pt-held"))
        assert await asyncio.to_thread(held.came.wait, 10)  # the holder has the connection
        busy = [await h.run("pt") for _ in range(2)]
        assert [r.error.code if r.error else None for r in busy] == [
            "http_timeout", "http_timeout"], busy
        assert busy[1].error is not None and "todas as conexões ocupadas" in busy[1].error.message
        circuit = await circuit_view(h.client, h.keys, "srv-busy",
                                     CircuitBreakerPolicy.model_validate(breaker))
        assert circuit == {"state": "closed", "failures": 0, "openedAt": None}, circuit
        held.release.set()
        assert (await holder).result == "held"
        result = await h.run("pt")
        assert (result.ok, result.result) == (True, "200"), result
        assert len(upstream.times) == 1
    finally:
        held.release.set()
        await h.close()


async def test_a_timeout_cut_by_the_tree_s_deadline_does_not_count_one_of_its_own_does(
        harness: Harness, http_server: LoopbackServer) -> None:
    hanging = Hanging()
    http_server.route("GET", "/hang", hanging)
    (worker,) = harness.workers
    breaker = CircuitBreakerPolicy.model_validate(
        {"failureThreshold": 1, "windowMs": 10_000, "cooldownMs": 60_000})
    scope = EdgeScope("server", "srv-late", "default", None, breaker)
    url = http_server.base + "/hang"
    try:
        # The tree has 300 ms left, the block's timeout is 10 s: the deadline cuts it.
        late = Gated(worker.http, worker.gate, scope, remaining_ms=300)
        with pytest.raises(ToolFailure) as cut:
            await late.exchange("GET", url, headers={}, content=None, timeout_s=10)
        assert cut.value.code == "http_timeout"
        circuit = await circuit_view(harness.client, harness.keys, "srv-late", breaker)
        assert circuit["state"] == "closed" and circuit["failures"] == 0, circuit
        # The block's own 300 ms timeout, well inside the tree's time: the upstream's fault.
        own = Gated(worker.http, worker.gate, scope, remaining_ms=10_000)
        with pytest.raises(ToolFailure) as timed_out:
            await own.exchange("GET", url, headers={}, content=None, timeout_s=0.3)
        assert timed_out.value.code == "http_timeout"
        circuit = await circuit_view(harness.client, harness.keys, "srv-late", breaker)
        assert (circuit["state"], circuit["failures"]) == ("open", 1), circuit
    finally:
        hanging.release.set()
    assert hanging.arrived == 2
