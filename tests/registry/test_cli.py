"""The registry from the command line: chatflow tools, servers and registry rebuild."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from chatflow.handlers.cli import main, registry_cmd
from tests.api.support import ENCRYPTION_KEY
from tests.registry.defs import returning
from tests.support.http import LoopbackServer

LIBRARY = Path(__file__).resolve().parents[1] / "fixtures" / "openapi" / "library-3.0.yaml"


@pytest.fixture
def cli(redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[..., Any]]:
    monkeypatch.setenv("CHATFLOW_PREFIX", prefix)
    monkeypatch.setenv("CHATFLOW_ENCRYPTION_KEY", ENCRYPTION_KEY)
    # The CLI logs to stderr; here to the stderr capsys holds for this test.
    monkeypatch.setattr(registry_cmd, "configure_logging", lambda: structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(sys.stderr), cache_logger_on_first_use=False))

    def run(*argv: str, code: int = 0) -> Any:
        capsys.readouterr()
        assert main([*argv, "--redis-url", redis_url]) == code
        out, err = capsys.readouterr()
        return json.loads(out) if code == 0 else err

    yield run
    structlog.reset_defaults()


def test_tools_are_created_published_trashed_and_rebuilt_from_the_command_line(
        cli: Callable[..., Any], tmp_path: Path) -> None:
    spec = tmp_path / "def.json"
    spec.write_text(json.dumps(returning("from the cli")))
    cli("tools", "create", "--id", "t-cli", "--name", "Cli", "--file", str(spec))
    published = cli("tools", "publish", "t-cli")
    assert published["status"] == "published"
    assert [t["id"] for t in cli("tools", "list")] == ["t-cli"]
    cli("tools", "delete", "t-cli")
    assert cli("tools", "list") == []
    summary = cli("registry", "rebuild")
    assert summary == {"events": 3, "tools": 1, "published": 0, "trashed": 1, "servers": 0,
                       "credentials": 0}
    cli("tools", "restore", "t-cli")
    assert cli("registry", "rebuild")["published"] == 1
    error = cli("tools", "purge", "t-cli", code=2)
    assert "is not in the trash" in error


def test_servers_and_an_openapi_import_from_the_command_line(cli: Callable[..., Any]) -> None:
    cli("servers", "create", "--id", "srv", "--name", "Pets", "--base-url", "http://127.0.0.1:9",
        "--secret-header", "Authorization=Bearer cli-secret")
    shown = cli("servers", "show", "srv")
    assert "cli-secret" not in json.dumps(shown)
    imported = cli("servers", "import-openapi", "srv", str(LIBRARY))
    assert imported["imported"] == 6
    assert len(cli("servers", "endpoints", "srv")) == 6
    error = cli("servers", "create", "--name", "x", "--base-url", "ftp://x", code=2)
    assert "baseUrl" in error


def test_the_cli_endpoint_test_applies_the_egress_policy_of_its_settings(
        cli: Callable[..., Any], http_server: LoopbackServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    http_server.route("GET", "/hello", {"ok": 1})
    cli("servers", "create", "--id", "srv", "--name", "Local", "--base-url", http_server.base)
    endpoint = tmp_path / "endpoint.json"
    endpoint.write_text(json.dumps({"id": "hello", "name": "Hello", "path": "/hello",
                                    "method": "GET"}))
    cli("servers", "add-endpoint", "srv", str(endpoint))
    assert cli("servers", "test", "srv", "hello")["status"] == 200
    # The CLI once sent through a client with the built-in policy, whatever the settings said.
    monkeypatch.setenv("CHATFLOW_EGRESS_DENY", "default, 127.0.0.0/8, ::1")
    refused = cli("servers", "test", "srv", "hello")
    assert refused["ok"] is False and refused["error"]["code"] == "egress_denied"
    assert len(http_server.requests) == 1
