"""``chatflow publish FILE`` publishes through the registry, as ``chatflow up`` does."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog

from chatflow.handlers.cli import main, registry_cmd
from chatflow.handlers.controlplane.examples import publish_examples
from chatflow.handlers.operations import logging as logging_setup
from tests.api.support import ENCRYPTION_KEY, Api
from tests.registry.defs import call_tool, definition, ret, returning

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@dataclass
class Ran:
    code: int
    out: str
    err: str


Cli = Callable[..., Awaitable[Ran]]


@pytest.fixture
def cli(api: Api, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Cli]:
    """Runs ``chatflow ARGS`` against the API's Redis and prefix (in a thread: it has its
    own event loop)."""
    monkeypatch.setenv("CHATFLOW_PREFIX", api.settings.prefix)
    monkeypatch.setenv("CHATFLOW_ENCRYPTION_KEY", ENCRYPTION_KEY)

    def to_stderr() -> None:
        structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr),
                            cache_logger_on_first_use=False)

    monkeypatch.setattr(logging_setup, "configure_logging", to_stderr)  # imported when a command runs
    monkeypatch.setattr(registry_cmd, "configure_logging", to_stderr)

    async def run(*argv: str) -> Ran:
        capsys.readouterr()
        code = await asyncio.to_thread(main, [*argv, "--redis-url",
                                              api.settings.redis_url or ""])
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    yield run
    structlog.reset_defaults()


def tool_file(tmp_path: Path, definition_: dict[str, Any], *, name: str = "Hello",
              file: str = "hello.json") -> str:
    path = tmp_path / file
    path.write_text(json.dumps({"id": "pt-hello", "toolId": "t-hello", "name": name,
                                "definition": definition_}))
    return str(path)


async def events(api: Api) -> int:
    return int(await api.client.xlen(api.keys.registry))


async def test_a_published_file_is_listed_by_the_api_and_its_key_holds_the_file(
        api: Api, cli: Cli, tmp_path: Path) -> None:
    ran = await cli("publish", tool_file(tmp_path, returning("hi")))

    assert (ran.code, ran.out.strip()) == (0, "created: tool t-hello published as pt-hello")
    listed = await api.ok("GET", "/tools")
    assert [(t["id"], t["publishedToolId"], t["status"]) for t in listed] == [
        ("t-hello", "pt-hello", "published")]
    assert await api.get_key(api.keys.tool("pt-hello")) == {
        "id": "pt-hello", "toolId": "t-hello", "name": "Hello", "definition": returning("hi"),
        "workspace": "default"}


async def test_a_registry_rebuild_keeps_the_key_of_a_published_file(
        api: Api, cli: Cli, tmp_path: Path) -> None:
    await cli("publish", tool_file(tmp_path, returning("hi")))
    await api.client.delete(api.keys.tool("pt-hello"))

    rebuilt = await cli("registry", "rebuild")

    assert rebuilt.code == 0 and json.loads(rebuilt.out)["published"] == 1
    assert (await api.get_key(api.keys.tool("pt-hello")))["toolId"] == "t-hello"


async def test_publishing_the_same_file_again_appends_nothing(
        api: Api, cli: Cli, tmp_path: Path) -> None:
    path = tool_file(tmp_path, returning("hi"))
    await cli("publish", path)
    before = await events(api)

    again = await cli("publish", path)

    assert before == 2  # created, published
    assert (again.code, again.out.strip()) == (
        0, "unchanged: tool t-hello is already published as pt-hello; nothing appended")
    assert await events(api) == before
    assert len(await api.ok("GET", "/tools")) == 1


async def test_a_changed_file_is_republished_under_the_same_published_tool_id(
        api: Api, cli: Cli, tmp_path: Path) -> None:
    await cli("publish", tool_file(tmp_path, returning("hi")))

    ran = await cli("publish", tool_file(tmp_path, returning("hello again"), name="Hello 2"))

    assert (ran.code, ran.out.strip()) == (0, "updated: tool t-hello republished as pt-hello")
    tool = await api.ok("GET", "/tools/t-hello")
    assert (tool["publishedToolId"], tool["status"], tool["name"]) == (
        "pt-hello", "published", "Hello 2")
    assert (await api.get_key(api.keys.tool("pt-hello")))["definition"] == returning(
        "hello again")


async def test_an_invalid_file_writes_nothing_and_names_the_path_of_each_problem(
        api: Api, cli: Cli, tmp_path: Path) -> None:
    broken = definition(ret("hi"), start="nowhere")

    ran = await cli("publish", tool_file(tmp_path, broken))

    assert ran.code == 1
    assert "definition.onboardingBlockId: no block 'nowhere'" in ran.err
    assert await events(api) == 0
    assert await api.client.exists(api.keys.tool("pt-hello")) == 0


async def test_a_call_to_an_unpublished_tool_is_refused_by_the_registry_before_anything_is_written(
        api: Api, cli: Cli, tmp_path: Path) -> None:
    caller = definition(call_tool("child", "t-missing", "pt-missing"), ret("done"))

    ran = await cli("publish", tool_file(tmp_path, caller))

    assert ran.code == 1
    assert "tool 't-hello' cannot be published: 1 problem(s)" in ran.err
    assert "  definition.blocks.child.publishedToolId: no published tool 'pt-missing'" in ran.err
    assert await events(api) == 0
    assert await api.ok("GET", "/tools") == []


async def test_a_bare_definition_file_gets_registry_problem_paths_relative_to_the_file(
        cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(definition(call_tool("child", "t-missing", "pt-missing"),
                                          ret("done"))))

    ran = await cli("publish", str(path), "--id", "pt-bare")

    assert ran.code == 1
    assert "  blocks.child.publishedToolId: no published tool 'pt-missing'" in ran.err


async def test_an_example_file_published_after_chatflow_up_is_unchanged(
        api: Api, cli: Cli) -> None:
    await publish_examples(api.settings, api.settings.redis_url or "")
    before = await events(api)

    ran = await cli("publish", str(EXAMPLES / "greeting.json"))

    assert ran.out.strip() == ("unchanged: tool t-greeting is already published as "
                               "pt-greeting; nothing appended")
    assert await events(api) == before


async def test_a_tool_in_the_trash_is_not_published_and_the_error_says_how_to_restore_it(
        api: Api, cli: Cli, tmp_path: Path) -> None:
    path = tool_file(tmp_path, returning("hi"))
    await cli("publish", path)
    await api.ok("DELETE", "/tools/t-hello")
    before = await events(api)

    ran = await cli("publish", path)

    assert ran.code == 2
    assert "chatflow tools restore t-hello" in ran.err
    assert await events(api) == before


async def test_another_published_tool_id_for_a_published_tool_is_a_conflict_and_writes_nothing(
        api: Api, cli: Cli, tmp_path: Path) -> None:
    path = tool_file(tmp_path, returning("hi"))
    await cli("publish", path)
    before = await events(api)

    ran = await cli("publish", tool_file(tmp_path, returning("changed")), "--id", "pt-other")

    assert ran.code == 2
    assert "tool 't-hello' is published as 'pt-hello', not 'pt-other'" in ran.err
    assert await events(api) == before
