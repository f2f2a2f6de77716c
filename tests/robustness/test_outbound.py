"""Each Outbound carries its own egress policy and its own connection gate (runtime/outbound.py):
two in one process never share either, and none exists without a policy."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import msgspec
import pytest

from chatflow.handlers.settings import Settings
from chatflow.runtime.blocks.runner import BlockRunner
from chatflow.runtime.definitions import DefinitionCache
from chatflow.runtime.egress import DEFAULT_POLICY, EgressPolicy
from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.limits import Limits
from chatflow.runtime.outbound import Outbound
from chatflow.runtime.outcome import BlockOutcome
from chatflow.runtime.sandbox import ScriptSandbox
from chatflow.runtime.state import ExecState, RootInfo
from chatflow.schemas.definition import HttpCallBlock
from chatflow.schemas.wire import ExecuteToolAction
from tests.core.tools import http
from tests.support.http import LoopbackServer, Request, json_reply

CLOSED_LOOPBACK = EgressPolicy.parse(deny="default, 127.0.0.0/8, ::1")


class NoTools:
    async def get_tool(self, published_tool_id: str) -> bytes | None:
        return None


def state() -> ExecState:
    now = int(time.time() * 1000)
    root = RootInfo("cmd-1", msgspec.convert({"id": "a", "toolId": "t", "publishedToolId": "p"},
                                             ExecuteToolAction), None, {}, "c", {}, {}, now)
    return ExecState(execId="0-x", rootId="0-x", partition=0, depth=0, toolId="t",
                     publishedToolId="p", defHash="", block="h", variables={}, context={},
                     root=root, startedMs=now, deadlineMs=now + 30_000)


@pytest.fixture
def sandbox() -> Iterator[ScriptSandbox]:
    box = ScriptSandbox(lanes=1)  # never started: these blocks run no script
    try:
        yield box
    finally:
        box.close()


def runner(outbound: Outbound, sandbox: ScriptSandbox) -> BlockRunner:
    return BlockRunner(http=outbound, sandbox=sandbox, tools=NoTools(),
                       definitions=DefinitionCache(), limits=Limits())


async def test_two_outbounds_in_one_process_each_apply_their_own_egress_policy(
        http_server: LoopbackServer, sandbox: ScriptSandbox) -> None:
    http_server.route("GET", "/hello", {"ok": 1})
    block = HttpCallBlock.model_validate(http("h", http_server.base + "/hello", {"type": "end"},
                                              responseStatusVariable="status"))
    async with Outbound(CLOSED_LOOPBACK) as closed, Outbound(DEFAULT_POLICY) as open_:
        strict, lenient = runner(closed, sandbox), runner(open_, sandbox)
        # Interleaved and concurrent: whichever object was made or used last decides nothing.
        results = await asyncio.gather(*(r.run(state(), block, int(time.time() * 1000))
                                         for r in (lenient, strict, lenient, strict)))
    allowed, denied = results[0], results[1]
    assert isinstance(allowed, BlockOutcome) and isinstance(denied, BlockOutcome)
    assert allowed.error is None and allowed.writes["status"] == 200
    assert isinstance(results[2], BlockOutcome) and results[2].writes == allowed.writes
    assert denied.error is not None and denied.error.code == "egress_denied"
    assert "127.0.0.0/8" in denied.error.message
    again = results[3]
    assert isinstance(again, BlockOutcome) and again.error is not None
    assert (again.error.code, again.error.message) == (denied.error.code, denied.error.message)
    assert [r.path for r in http_server.requests] == ["/hello", "/hello"]  # the lenient two


async def test_each_outbound_gates_its_own_connections(http_server: LoopbackServer) -> None:
    arrived = {path: threading.Event() for path in ("/a1", "/b1", "/a2")}
    release = threading.Event()

    def held(request: Request) -> tuple[int, dict[str, str], bytes]:
        arrived[request.path].set()
        release.wait(30)
        return json_reply({"path": request.path})

    for path in arrived:
        http_server.route("GET", path, held)

    async def get(outbound: Outbound, path: str, timeout_s: float = 30) -> int:
        status, _body, _type = await outbound.send("GET", http_server.base + path, headers={},
                                                   content=None, timeout_s=timeout_s)
        return status

    async with Outbound(DEFAULT_POLICY, max_connections=1) as a, \
            Outbound(DEFAULT_POLICY, max_connections=1) as b:
        a1 = asyncio.create_task(get(a, "/a1"))
        assert await asyncio.to_thread(arrived["/a1"].wait, 10)
        # b's one connection is its own: it gets through while a's is held.
        b1 = asyncio.create_task(get(b, "/b1"))
        assert await asyncio.to_thread(arrived["/b1"].wait, 10)
        # a's second request waits at a's gate, inside its own timeout, and never leaves.
        with pytest.raises(ToolFailure) as waited:
            await get(a, "/a2", timeout_s=0.3)
        assert waited.value.code == "http_timeout"
        assert "conexões ocupadas" in waited.value.message
        release.set()
        assert await asyncio.gather(a1, b1) == [200, 200]
        assert await get(a, "/a2") == 200  # the gate opens again once a1 is done
    assert [r.path for r in http_server.requests] == ["/a1", "/b1", "/a2"]


def test_an_outbound_cannot_be_made_without_a_policy() -> None:
    with pytest.raises(TypeError):
        Outbound()  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="max_connections"):
        Outbound(DEFAULT_POLICY, max_connections=0)


async def test_settings_build_an_outbound_with_their_policy_and_pool_size() -> None:
    settings = Settings(egress_allow="api.example.com", egress_deny="default, 10.0.0.0/8",
                        http_max_connections=3)
    async with settings.outbound() as outbound, Settings().outbound() as default:
        assert outbound.policy == settings.egress_policy()
        assert outbound.max_connections == 3
        # Without egress settings: the secure default, never "allow everything".
        assert default.policy == DEFAULT_POLICY != EgressPolicy()
