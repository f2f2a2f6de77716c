"""Issue 32, points 2 and 4: the CLI finds the `chatflow up` running next to it, and `up` says
its URLs only once the API answers.

One real `chatflow up` in an empty folder, with no REDIS_URL nor any CHATFLOW_* variable, as a
new user starts it; the commands run in that folder or below it, in processes of their own.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from chatflow.handlers.cli import local_up
from chatflow.handlers.cli.main import main
from chatflow.handlers.operations import logging as logging_setup
from chatflow.handlers.operations.embedded import free_port
from chatflow.handlers.settings import Settings

CHATFLOW = str(Path(sys.executable).with_name("chatflow"))


def clean_env() -> dict[str, str]:
    """A new user's shell: no REDIS_URL, no CHATFLOW_* (the suite's CHATFLOW_UP_FILE=0 too)."""
    env = {k: v for k, v in os.environ.items()
           if k != "REDIS_URL" and not k.startswith("CHATFLOW_")}
    env.update(CHATFLOW_METRICS_PORT="0", CHATFLOW_LOG_FORMAT="json")
    return env


@dataclass
class Up:
    cwd: Path
    lines: list[str] = field(default_factory=list)
    first_answer: int | None = None  # the status of a request sent as "API on" appeared
    api: str = ""

    def run(self, *argv: str, where: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CHATFLOW, *argv], cwd=where or self.cwd / "sub" / "deeper",
                              env=env or clean_env(), capture_output=True, text=True,
                              timeout=120)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    running = Up(tmp_path_factory.mktemp("first-hour"))
    (running.cwd / "sub" / "deeper").mkdir(parents=True)
    proc = subprocess.Popen([CHATFLOW, "up", "--port", str(free_port()), "--api-port", "0"],
                            cwd=running.cwd, env=clean_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stderr or []:
            if line.startswith("API on ") and running.first_answer is None:
                # At once, on this thread, before the next line is read: no retry, no wait.
                running.api = line.split()[2]
                try:
                    running.first_answer = httpx.get(running.api + "/openapi.json",
                                                     timeout=30).status_code
                except httpx.TransportError:
                    running.first_answer = -1
            running.lines.append(line)
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        line = ""
        while not line.startswith("ready. try: "):
            try:
                line = lines.get(timeout=120)
            except queue.Empty:
                pytest.fail("chatflow up was not ready in 120 s:\n" + "".join(running.lines))
        yield running
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_up_says_its_api_url_only_once_a_request_sent_at_that_moment_is_answered(up: Up) -> None:
    assert up.first_answer == 200, "".join(up.lines)
    told = "".join(up.lines)
    key_line = next(line for line in up.lines if line.startswith("try: curl "))
    assert up.lines.index(key_line) > next(
        i for i, line in enumerate(up.lines) if line.startswith("API on "))
    assert f"run history in sqlite:///{up.cwd}/.chatflow/valkey/history.db" in told


def test_exec_executions_and_fork_work_from_below_the_folder_with_no_environment(up: Up) -> None:
    ran = up.run("exec", "--tool", "pt-greeting", "--input", "name=Ana", "--contact", "c-first")
    assert ran.returncode == 0, ran.stderr
    execution = json.loads(ran.stdout)["executionId"]
    listed = up.run("executions", "--state", "finished", "--contact", "c-first", "--json")
    assert listed.returncode == 0, listed.stderr
    (run,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (run["executionId"], run["contactId"]) == (execution, "c-first")
    forked = up.run("fork", execution, "--from", "clean", "--var", "name=Bia")
    assert forked.returncode == 0, forked.stderr
    assert json.loads(forked.stdout)["result"] == "Olá, Bia!"


def test_executions_in_flight_says_how_to_see_finished_runs(up: Up) -> None:
    listed = up.run("executions", "--contact", "nobody")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == "no executions in flight"
    assert "add --state finished" in listed.stderr


def test_the_environment_and_the_flags_still_win(up: Up) -> None:
    port = free_port()  # nothing listens there
    env = {**clean_env(), "REDIS_URL": f"redis://127.0.0.1:{port}/0"}
    refused = up.run("stats", env=env)
    assert refused.returncode == 3 and f"127.0.0.1:{port}" in refused.stderr
    assert "up.json" not in refused.stderr  # the URL is the environment's, not up's
    flagged = up.run("stats", "--redis-url", f"redis://127.0.0.1:{port}/0")
    assert flagged.returncode == 3 and f"127.0.0.1:{port}" in flagged.stderr
    empty = up.cwd / "empty.db"
    upgraded = up.run("history", "upgrade", "--url", f"sqlite:///{empty}")
    assert upgraded.returncode == 0, upgraded.stderr
    other = up.run("executions", "--state", "finished", "--history-url", f"sqlite:///{empty}")
    assert other.returncode == 0 and other.stdout.strip() == "no finished runs match"


def test_up_json_names_the_files_and_holds_no_secret(up: Up) -> None:
    text = (up.cwd / ".chatflow" / "up.json").read_text()
    data = json.loads(text)
    valkey = up.cwd / ".chatflow" / "valkey"
    assert data["redisPasswordFile"] == str(valkey / "valkey.password")
    assert data["adminKeyFile"] == str(valkey / "admin-api-key")
    assert data["encryptionKeyFile"] == str(valkey / "encryption.key")
    assert data["apiUrl"] == up.api
    for secret in ("valkey.password", "admin-api-key", "encryption.key"):
        assert (valkey / secret).read_text().strip() not in text


# -- what is missing is named, in process (no `up` needed)


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A folder of its own as the working directory, the up file looked for, no REDIS_URL."""
    for name in ("REDIS_URL", "CHATFLOW_REDIS_URL", "CHATFLOW_UP_FILE", "CHATFLOW_HISTORY_URL",
                 "CHATFLOW_PREFIX", "CHATFLOW_ENCRYPTION_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(logging_setup, "configure_logging", lambda: None)
    local_up.here.cache_clear()
    yield tmp_path
    local_up.here.cache_clear()


def test_without_an_up_the_messages_name_the_file_looked_for(
        shell: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exec", "--tool", "pt-x"]) == 2
    err = capsys.readouterr().err
    assert f"no .chatflow/up.json in {shell} or a folder above it" in err
    assert "REDIS_URL is not set" in err
    assert main(["executions", "--state", "finished"]) == 2
    err = capsys.readouterr().err
    assert "CHATFLOW_HISTORY_URL" in err and f"no .chatflow/up.json in {shell}" in err


def test_a_stale_up_file_is_named_with_its_dead_pid(
        shell: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(gone.stdout)  # a process that has exited
    port = free_port()
    (shell / "a" / "b").mkdir(parents=True)
    local_up.write(shell, {"redisUrl": f"redis://127.0.0.1:{port}/0", "prefix": "p:"})
    path = shell / ".chatflow" / "up.json"
    path.write_text(path.read_text().replace(f'"pid": {os.getpid()}', f'"pid": {pid}'))
    monkeypatch.chdir(shell / "a" / "b")
    assert main(["stats"]) == 3
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}" in err
    assert f"(the URL is the one in {path}, written by `chatflow up` (pid {pid}, which is not " \
           "running now))" in err


def test_the_environment_wins_field_by_field(shell: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = shell / "valkey"
    secrets.mkdir()
    (secrets / "valkey.password").write_text("pw/with:odd@chars\n")
    (secrets / "encryption.key").write_text("ab" * 32 + "\n")
    local_up.write(shell, {"redisUrl": "redis://127.0.0.1:7000/0",
                           "redisPasswordFile": str(secrets / "valkey.password"),
                           "prefix": "up:", "partitions": 8,
                           "historyUrl": "sqlite:////x/history.db",
                           "encryptionKeyFile": str(secrets / "encryption.key")})
    found = local_up.find(shell)
    assert found is not None
    filled = found.fill(Settings())
    assert filled.redis_url == "redis://default:pw%2Fwith%3Aodd%40chars@127.0.0.1:7000/0"
    assert (filled.prefix, filled.partitions) == ("up:", 8)
    assert filled.history_url == "sqlite:////x/history.db"
    assert filled.encryption_key == "ab" * 32
    monkeypatch.setenv("CHATFLOW_PREFIX", "mine:")
    monkeypatch.setenv("CHATFLOW_HISTORY_URL", "sqlite:////mine.db")
    mine = found.fill(Settings())
    assert (mine.prefix, mine.history_url) == ("mine:", "sqlite:////mine.db")
    assert mine.redis_url == filled.redis_url  # what the environment left unset still comes
