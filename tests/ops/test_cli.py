"""The people's views: tail, stats, executions and projections rebuild, through `chatflow`."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator

import pytest
import structlog

from chatflow.handlers.cli.main import main
from chatflow.handlers.cli.projections_cmd import SCRATCH
from chatflow.handlers.operations.logging import configure_logging
from tests.harness import Harness
from tests.ops.tools import publish_examples, returning, script_failing
from tests.support.http import LoopbackServer


@pytest.fixture
def env(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    """The CLI pointed at the harness; the workers' log lines kept off the captured stdout."""
    monkeypatch.setenv("CHATFLOW_PREFIX", harness.settings.prefix)
    monkeypatch.setenv("REDIS_URL", harness.url)
    previous = structlog.get_config()
    configure_logging(json=True, stream=io.StringIO())
    try:
        yield harness
    finally:
        structlog.configure(**previous)


@pytest.fixture
def cep() -> Iterator[LoopbackServer]:
    server = LoopbackServer()
    server.route("GET", "/ws/01001000/json/", {"logradouro": "Praça da Sé", "bairro": "Sé",
                                               "localidade": "São Paulo", "uf": "SP"})
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def chatflow(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def test_tail_renders_a_nested_run_as_an_indented_timeline(
        env: Harness, cep: LoopbackServer, capsys: pytest.CaptureFixture[str]) -> None:
    await publish_examples(env, cep.base + "/ws/{{cep}}/json/")
    result = await env.run("pt-delivery-quote", inputs={"cep": "01001000", "weightKg": "2"},
                           debug=True, contact="c-tail")
    assert result.ok
    events = len(await env.stream(env.keys.debug("c-tail")))
    assert await chatflow("tail", "--contact", "c-tail", "--from-start",
                          "--count", str(events)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(" ", 1)[1].startswith("▶ pt-delivery-quote")
    (fetch,) = [line for line in lines if " fetch [httpCall]" in line]
    assert "    └ ✓ ok" in fetch and "(pt-cep, depth 1)" in fetch and "→ matched found" in fetch
    assert "GET http://127.0.0.1:" in fetch and "→ 200" in fetch
    (price,) = [line for line in lines if " price [executeScript]" in line]
    assert "  ✓ ok" in price and "└" not in price and "→ default" in price
    assert lines[-1].split(" ", 1)[1].startswith("■ result=")


async def test_stats_prints_the_seven_day_table(
        env: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    await env.put_tool("pt-s-ok", returning("x"), tool_id="t-s-ok")
    await env.put_tool("pt-s-bad", script_failing(), tool_id="t-s-bad")
    for _ in range(3):
        await env.run("pt-s-ok")
    await env.run("pt-s-bad")
    await env.workers[0].projection.wait_caught_up()
    assert await chatflow("stats") == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["TOOL", "RUNS", "7D", "AVG", "MS", "SUCCESS"]
    rows = {line.split()[0]: line.split() for line in table[1:]}
    assert rows["t-s-ok"][1] == "3" and rows["t-s-ok"][3] == "100.0%"
    assert rows["t-s-bad"][1] == "1" and rows["t-s-bad"][3] == "0.0%"
    assert await chatflow("stats", "t-s-ok") == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["TOOL", "t-s-ok"]


async def test_stats_given_a_published_tool_id_shows_its_tool_and_says_so(
        env: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    await env.put_tool("pt-s-pub", returning("x"), tool_id="t-s-pub")
    for _ in range(2):
        await env.run("pt-s-pub")
    await env.workers[0].projection.wait_caught_up()
    assert await chatflow("stats", "pt-s-pub") == 0
    captured = capsys.readouterr()
    (row,) = captured.out.splitlines()[1:]
    assert row.split()[:2] == ["t-s-pub", "2"]
    assert "pt-s-pub is a publishedToolId; showing its tool t-s-pub" in captured.err
    assert await chatflow("stats", "nothing-like-it") == 0
    assert "stats take a Tool.id" in capsys.readouterr().err


async def test_a_verified_rebuild_shows_progress_and_equal_projections(
        env: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    await env.put_tool("pt-r", returning("x"), tool_id="t-r")
    for _ in range(4):
        await env.run("pt-r")
    await env.workers[0].projection.wait_caught_up()
    assert await chatflow("projections", "rebuild", "--verify") == 0
    captured = capsys.readouterr()
    assert "rebuild: 4/4 events (100%)" in captured.err
    assert "projections equal" in captured.out
    left = [k async for k in env.client.scan_iter(match=f"{env.settings.prefix}*{SCRATCH}*")]
    assert left == [], "the verify copy stayed behind"


async def test_executions_says_when_nothing_is_in_flight(
        env: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    await env.put_tool("pt-e", returning("x"))
    await env.run("pt-e")
    assert await chatflow("executions") == 0
    assert capsys.readouterr().out.strip() == "no executions in flight"
