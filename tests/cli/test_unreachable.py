"""With REDIS_URL pointing at nothing, every command prints one line naming the URL, the cause
and what to do, and exits 3: no traceback, no password."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chatflow.handlers.cli.main import main
from chatflow.handlers.cli.unreachable import ADVICE
from chatflow.handlers.operations import logging as logging_setup
from chatflow.handlers.operations.embedded import free_port

# Run as a user would, in their own process (the console entry point, no traceback):
IN_A_PROCESS = [["worker"], ["exec", "--tool", "pt-x"], ["tail", "--contact", "c"], ["api"]]
# The rest through main() in this process (the same code path, without an interpreter each):
IN_PROCESS = [["stats"], ["executions"], ["cancel", "0-abc"], ["replay", "0-abc"],
              ["tools", "list"], ["servers", "list"], ["registry", "rebuild"],
              ["projections", "run"], ["keys", "list"], ["up", "--no-api", "--no-examples"],
              ["test"], ["export", "unreachable-export"], ["import", "FOLDER"],
              ["tools", "versions", "t-x"], ["tools", "diff", "t-x", "1", "2"],
              ["tools", "rollback", "t-x", "1"], ["keys", "rotate-encryption"]]


def check_line(err: str, port: int, name: str) -> None:
    (line,) = err.splitlines()  # one line, no traceback
    assert line.startswith(
        f"chatflow: cannot reach Valkey/Redis at redis://app:***@127.0.0.1:{port}/0 ("), name
    assert f"connecting to 127.0.0.1:{port}" in line  # the cause, as redis-py words it
    assert line.endswith(f"): {ADVICE}"), name
    assert "s3cret-pw" not in err


def test_the_long_running_and_everyday_commands_say_in_one_line_that_valkey_is_not_there() -> None:
    port = free_port()  # nothing listens there
    env = {**os.environ, "REDIS_URL": f"redis://app:s3cret-pw@127.0.0.1:{port}/0",
           "CHATFLOW_METRICS_PORT": "0"}
    procs = {" ".join(argv): subprocess.Popen(
        [sys.executable, "-m", "chatflow.handlers.cli", *argv], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE) for argv in IN_A_PROCESS}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 3, (name, err[-2000:])
        check_line(err, port, name)
        assert "s3cret-pw" not in out


@pytest.mark.parametrize("argv", IN_PROCESS, ids=" ".join)
def test_every_other_command_says_the_same(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    port = free_port()
    argv = [str(tmp_path) if a == "FOLDER" else a for a in argv]  # import reads a folder first
    monkeypatch.setenv("REDIS_URL", f"redis://app:s3cret-pw@127.0.0.1:{port}/0")
    monkeypatch.setenv("CHATFLOW_ENCRYPTION_KEYS", "ab" * 32)  # rotate-encryption needs one
    monkeypatch.setattr(logging_setup, "configure_logging", lambda: None)  # keep pytest's capture
    assert main(argv) == 3
    captured = capsys.readouterr()
    check_line(captured.err, port, " ".join(argv))
    assert "s3cret-pw" not in captured.out


def test_publish_check_of_a_missing_file_reports_only_that_it_is_missing(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["publish", "missing.json", "--check"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "missing.json: 1 problem(s)",
        "  missing.json: No such file or directory (nor is it a shipped example: "
        "cep_lookup, delivery_quote, greeting, shipping_quote)"]


def test_publish_check_of_a_file_that_is_not_an_object_reports_only_that(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "list.json")
    Path(path).write_text("[1, 2]")
    assert main(["publish", path, "--check"]) == 1
    assert capsys.readouterr().err.splitlines() == [f"{path}: 1 problem(s)",
                                                    "  <root>: expected a JSON object"]
