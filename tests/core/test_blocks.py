"""Each block kind, end to end through the stream runtime."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.core.tools import call, http, ret, script, to, tool, when
from tests.harness import Harness
from tests.support.http import LoopbackServer, Request, json_reply


async def test_return_block_interpolates_inputs_and_session_variables(harness: Harness) -> None:
    await harness.put_tool("pt-1", tool("r", ret("r", "{{greeting}}, {{name}} ({{router.id}})")))
    result = await harness.run("pt-1", inputs={"greeting": "Oi"}, variables={"name": "Ana"})
    assert result.ok and result.result == "Oi, Ana (r-1)"
    assert result.variables == {"out": "Oi, Ana (r-1)"}
    assert result.next == "continue" and result.error is None


async def test_inputs_are_interpolated_from_the_callers_session(harness: Harness) -> None:
    await harness.put_tool("pt-1", tool("r", ret("r", "{{cep}}")))
    result = await harness.run("pt-1", inputs={"cep": "{{zip}}-x"}, variables={"zip": "01001000"})
    assert result.result == "01001000-x"


async def test_http_call_reads_a_json_body_by_path(harness: Harness,
                                                   http_server: LoopbackServer) -> None:
    http_server.route("GET", "/ws/01001000/json/", {"items": [{"id": "abc"}], "n": 2})
    await harness.put_tool("pt-h", tool("h",
        http("h", http_server.base + "/ws/{{cep}}/json/", to("r"),
             headers={"X-Token": "{{token}}"}, responseBodyVariable="resp",
             responseStatusVariable="status"),
        ret("r", "{{status}} {{resp.items.0.id}} {{resp.n}}")))
    result = await harness.run("pt-h", inputs={"cep": "01001000", "token": "tk"})
    assert result.result == "200 abc 2"
    assert http_server.requests[0].headers["X-Token"] == "tk"


async def test_http_call_sends_an_interpolated_body(harness: Harness,
                                                    http_server: LoopbackServer) -> None:
    def echo(req: Request) -> tuple[int, dict[str, str], bytes]:
        return json_reply({"got": json.loads(req.body)})

    http_server.route("POST", "/echo", echo)
    await harness.put_tool("pt-h", tool("h",
        http("h", http_server.base + "/echo", to("r"), method="POST",
             body='{"name": "{{name}}"}', responseBodyVariable="resp"),
        ret("r", "{{resp.got.name}}")))
    assert (await harness.run("pt-h", inputs={"name": "Bia"})).result == "Bia"


async def test_http_error_with_continue_fills_the_error_variable_and_goes_on(
        harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/boom", lambda _r: json_reply({"error": "x"}, 503))
    await harness.put_tool("pt-h", tool("h",
        http("h", http_server.base + "/boom", to("r"), on_error="continue",
             errorVariable="err", responseStatusVariable="status"),
        ret("r", "{{status}}|{{err}}")))
    result = await harness.run("pt-h")
    assert result.ok
    status, err = result.result.split("|", 1)
    assert status == "503" and "HTTP 503" in err


async def test_http_error_with_blocking_fails_the_tool(harness: Harness,
                                                       http_server: LoopbackServer) -> None:
    http_server.route("GET", "/boom", lambda _r: json_reply({}, 500))
    await harness.put_tool("pt-h", tool("h", http("h", http_server.base + "/boom", to("r")),
                                        ret("r", "never")))
    result = await harness.run("pt-h")
    assert not result.ok and result.error is not None
    assert result.error.code == "http_status" and "HTTP 500" in result.error.message


async def test_http_timeout_never_exceeds_the_block_timeout(harness: Harness) -> None:
    # A listening socket that never answers: the block's own timeoutMs must end the wait.
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/slow"
        await harness.put_tool("pt-h", tool("h", http("h", url, to("r"), timeoutMs=200,
                                                      on_error="continue", errorVariable="e"),
                                            ret("r", "{{e}}")))
        result = await harness.run("pt-h")
        assert "sem resposta em 0.2s" in result.result
    finally:
        sock.close()


async def test_execute_script_gets_inputs_and_writes_its_output(harness: Harness) -> None:
    await harness.put_tool("pt-s", tool("s",
        script("s", "return {sum: input.a + b, who: input.who};", "out2", to("r"),
               inputs={"a": "{{x}}", "b": "{{y}}", "who": "n={{x}}"}),
        ret("r", "{{out2.sum}} {{out2.who}}")))
    result = await harness.run("pt-s", variables={"x": 2, "y": 5})
    assert result.result == "7 n=2"


async def test_script_errors_follow_on_error_continue(harness: Harness) -> None:
    await harness.put_tool("pt-s", tool("s",
        script("s", "throw new Error('nope')", "v", to("r"), on_error="continue",
               error_variable="err"),
        ret("r", "[{{v}}] {{err}}")))
    result = await harness.run("pt-s")
    assert result.ok and result.result.startswith("[] ") and "nope" in result.result


async def test_call_tool_runs_a_child_with_the_parent_variables_and_its_inputs(
        harness: Harness) -> None:
    await harness.put_tool("pt-child", tool("r", ret("r", "{{greet}} {{name}}")))
    await harness.put_tool("pt-parent", tool("c",
        call("c", "pt-child", "childOut", to("r"), inputs={"greet": "Oi"}),
        ret("r", "<{{childOut}}>")))
    result = await harness.run("pt-parent", variables={"name": "Ana"})
    assert result.result == "<Oi Ana>"


async def test_child_writes_do_not_leak_into_the_parent(harness: Harness) -> None:
    await harness.put_tool("pt-child", tool("s", script("s", "return 'secret'", "local", to("r")),
                                            ret("r", "done")))
    await harness.put_tool("pt-parent", tool("c", call("c", "pt-child", "o", to("r")),
                                             ret("r", "{{o}}/{{local}}")))
    result = await harness.run("pt-parent")
    assert result.result == "done/"
    assert set(result.variables) == {"out"}


async def test_navigation_leaving_the_tree_returns_an_empty_string(harness: Harness) -> None:
    await harness.put_tool("pt-e", tool("s", script("s", "return 1", "v",
                                                    {"type": "endAttendance"})))
    result = await harness.run("pt-e")
    assert result.ok and result.result == "" and result.variables == {"out": ""}


async def test_conditions_route_between_blocks(harness: Harness) -> None:
    await harness.put_tool("pt-c", tool("s",
        script("s", "return input.n * 2", "double", to("low"), inputs={"n": "{{n}}"},
               conditions=[when("big", "double", "greaterThan", "10", to("high"))]),
        ret("high", "high {{double}}"), ret("low", "low {{double}}")))
    assert (await harness.run("pt-c", variables={"n": 6})).result == "high 12"
    assert (await harness.run("pt-c", variables={"n": 2})).result == "low 4"


async def test_unsupported_blocks_fail_with_an_error_naming_the_block(harness: Harness) -> None:
    block = {"type": "callEndpoint", "id": "ep", "serverId": "s", "endpointId": "e",
             "onError": "continue", "defaultOutput": to("r")}
    await harness.put_tool("pt-u", tool("ep", block, ret("r", "x")))
    harness.workers[0].runner.executors.pop("callEndpoint", None)
    result = await harness.run("pt-u")
    assert not result.ok and result.error is not None
    assert result.error.code == "block_not_supported"
    assert "blockId=ep" in result.error.message and "callEndpoint" in result.error.message


async def test_http_blocks_share_a_pool_no_larger_than_http_max_connections(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    import threading

    lock, active, peak, never = threading.Lock(), [0], [0], threading.Event()

    def slow(_request: Any) -> Any:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        never.wait(0.2)  # a slow endpoint: each request is held 200 ms
        with lock:
            active[0] -= 1
        return json_reply({"ok": 1})

    http_server.route("GET", "/slow", slow)
    # Queued behind one connection, the third request waits 400 ms: past FAST's 500 ms claim
    # idle time under load, so reclaim would re-run a step (at-least-once HTTP) and count a
    # fourth request. This test is about the pool, not reclaim.
    h = Harness(redis_url, prefix, http_max_connections=1, claim_idle_ms=60_000)
    try:
        await h.start_worker()
        await h.put_tool("pt-slow-http", tool("h", http("h", http_server.base + "/slow", to("r")),
                                              ret("r", "done")))
        results = await asyncio.gather(*(h.run("pt-slow-http", command_id=f"slow-{i}")
                                         for i in range(3)))
        assert [r.result for r in results] == ["done"] * 3
        assert len(http_server.requests) == 3
        assert peak[0] == 1  # with httpx's default pool the three would overlap
    finally:
        await h.close()


async def test_a_request_waiting_for_a_free_connection_times_out_inside_its_block_timeout(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    import threading

    arrived, release = threading.Event(), threading.Event()

    def held(_request: Any) -> Any:
        arrived.set()
        release.wait(10)
        return json_reply({"ok": 1})

    http_server.route("GET", "/held", held)
    http_server.route("GET", "/fast", {"ok": 2})
    h = Harness(redis_url, prefix, http_max_connections=1, claim_idle_ms=60_000)
    try:
        await h.start_worker()
        await h.put_tool("pt-held", tool("h", http("h", http_server.base + "/held", to("r")),
                                         ret("r", "held")))
        await h.put_tool("pt-fast", tool("h", http("h", http_server.base + "/fast", to("r"),
                                                   timeoutMs=300),
                                         ret("r", "fast")))
        holder = asyncio.create_task(h.run("pt-held"))
        assert await asyncio.to_thread(arrived.wait, 10)
        waiting = await h.run("pt-fast")
        assert waiting.error is not None and waiting.error.code == "http_timeout"
        assert "todas as conexões ocupadas" in waiting.error.message
        assert [r.path for r in http_server.requests] == ["/held"]  # /fast never went out
        release.set()
        assert (await holder).result == "held"
    finally:
        release.set()
        await h.close()


async def test_a_slow_endpoint_does_not_hold_the_other_steps_of_its_batch(
        harness: Harness, http_server: LoopbackServer) -> None:
    import threading

    import msgspec

    from chatflow.handlers.interfaces.client import last_id, wait_results

    release = threading.Event()

    def held(_request: Any) -> Any:
        release.wait(20)
        return json_reply({"ok": 1})

    http_server.route("GET", "/held", held)
    http_server.route("GET", "/fast", {"ok": 2})
    await harness.put_tool("pt-held", tool("h", http("h", http_server.base + "/held", to("r")),
                                           ret("r", "held")))
    await harness.put_tool("pt-fast", tool("h", http("h", http_server.base + "/fast", to("r")),
                                           ret("r", "fast")))
    # Two commands of one partition, published atomically: the intake takes them in one
    # batch and writes both step entries in one commit, so one step batch reads both.
    ids = [f"hol-{i}" for i in range(200)]
    a = next(i for i in ids if harness.keys.partition_of(i) == 0)
    b = next(i for i in ids if harness.keys.partition_of(i) == 0 and i != a)
    after = await last_id(harness.client, harness.keys.results)
    async with harness.client.pipeline(transaction=True) as pipe:
        for cid, pt in ((a, "pt-held"), (b, "pt-fast")):
            pipe.xadd(harness.keys.commands, {
                "data": msgspec.json.encode(harness.command(pt, command_id=cid))})
        await pipe.execute()
    try:
        # Well inside the held call's 10 s block timeout.
        fast = await wait_results(harness.client, harness.keys.results, {b}, after=after,
                                  timeout_s=5)
        assert fast[b][0].result == "fast"
        assert not release.is_set()  # answered while the slow endpoint still holds its call
    finally:
        release.set()
    slow = await wait_results(harness.client, harness.keys.results, {a}, after=after,
                              timeout_s=10)
    assert slow[a][0].result == "held"
