"""Issue 32, point 7: `chatflow exec` and `chatflow fork` flags a new user trips on, against a
real worker: a dotted `--var`, and a `--tool` that names a tool rather than its published id."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import structlog

from chatflow.handlers.cli import main, registry_cmd
from tests.support.processes import worker_process

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Cli]:
    """`chatflow ...` in this process (asyncio.run per command, as in a shell), against a
    `chatflow worker` process on this test's prefix."""
    monkeypatch.setenv("CHATFLOW_PREFIX", prefix)
    monkeypatch.setattr(registry_cmd, "configure_logging", lambda: structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(sys.stderr), cache_logger_on_first_use=False))

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([*argv, "--redis-url", redis_url])
        out, err = capsys.readouterr()
        return code, out, err

    with worker_process(redis_url, prefix):
        yield run


def publish(cli: Cli, folder: Path, tool_id: str, name: str, value: str) -> str:
    spec = folder / f"{tool_id}.json"
    spec.write_text(json.dumps({"blocks": {"r": {"type": "return", "id": "r", "value": value}},
                                "onboardingBlockId": "r"}))
    code, _out, err = cli("tools", "create", "--id", tool_id, "--name", name, "--file",
                          str(spec))
    assert code == 0, err
    code, out, err = cli("tools", "publish", tool_id)
    assert code == 0, err
    published: str = json.loads(out)["publishedToolId"]
    return published


def test_a_dotted_var_sets_the_path_a_template_reads(cli: Cli, tmp_path: Path) -> None:
    pt = publish(cli, tmp_path, "t-order", "Order", "{{order.total}} {{order.currency}}")
    code, out, err = cli("exec", "--tool", pt, "--var", "order.total=40",
                         "--var", "order.currency=BRL", "--timeout", "60")
    assert code == 0, err
    assert json.loads(out)["result"] == "40 BRL"


def test_a_dotted_var_through_a_value_that_is_no_object_is_refused_naming_it(
        cli: Cli) -> None:
    code, _out, err = cli("exec", "--tool", "pt-order", "--var", "order=1",
                          "--var", "order.total=40")
    assert code == 2
    assert err.strip() == ("chatflow: --var order.total=...: order is \"1\", not an object; set "
                           "it whole (--var 'order={...}')")


def test_a_tool_named_by_its_name_gets_its_published_id_suggested(
        cli: Cli, tmp_path: Path) -> None:
    published = publish(cli, tmp_path, "t-tier", "Order tier", "gold")
    code, out, err = cli("exec", "--tool", "Order tier", "--timeout", "60")
    assert code == 1 and json.loads(out)["error"]["code"] == "tool_not_found"
    assert err.strip() == (f"chatflow: 'Order tier' is tool 't-tier' (Order tier), published as "
                           f"'{published}': chatflow exec --tool {published} ...")
    code, out, err = cli("exec", "--tool", published[:-1], "--timeout", "60")
    assert code == 1
    assert f"did you mean '{published}' (Order tier)?" in err
    assert json.loads(cli("exec", "--tool", published, "--timeout", "60")[1])["result"] == "gold"
