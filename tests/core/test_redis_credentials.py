"""REDIS_URL with credentials: a server with ``requirepass`` serves the worker, the API and
the CLI when the URL carries the password, and refuses them with a clear error (that never
shows a password) when it does not. ``chatflow up``'s embedded server has one of its own."""

from __future__ import annotations

import os
import queue
import secrets
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from chatflow.handlers.operations.embedded import EmbeddedServer
from tests.api.support import api_settings, running_api
from tests.harness import Harness

CHATFLOW = [sys.executable, "-c", "import sys; from chatflow.handlers.cli.main import main; "
                                  "sys.exit(main())"]


@pytest.fixture(scope="module")
def locked() -> Iterator[EmbeddedServer]:
    server = EmbeddedServer(password="pw-" + secrets.token_urlsafe(12)).start()
    try:
        yield server
    finally:
        server.stop()


def chatflow(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REDIS_URL": url, "CHATFLOW_METRICS_PORT": "0"}
    return subprocess.run([*CHATFLOW, *args], env=env, capture_output=True, text=True,
                          timeout=60)


async def test_a_url_with_the_password_serves_the_worker_the_api_and_the_cli(
        locked: EmbeddedServer, prefix: str) -> None:
    assert locked.password and locked.password in locked.url
    harness = Harness(locked.url, prefix)
    try:
        await harness.start_worker()
        await harness.put_tool("pt-hi", {"onboardingBlockId": "r", "blocks": {
            "r": {"type": "return", "id": "r", "value": "hi {{name}}"}}})
        result = await harness.run("pt-hi", inputs={"name": "Ana"})
        assert result.ok and result.result == "hi Ana"
    finally:
        await harness.close()
    async with running_api(api_settings(locked.url, prefix)) as api:
        assert (await api.http.get("/tools")).status_code == 200
    listed = chatflow(locked.url, "tools", "list")
    assert listed.returncode == 0, listed.stderr


@pytest.mark.parametrize("command", [["tools", "list"], ["worker"], ["api", "--port", "0"],
                                     ["registry", "rebuild"]], ids=" ".join)
def test_a_url_without_the_password_fails_with_a_clear_error_that_shows_no_password(
        locked: EmbeddedServer, command: list[str]) -> None:
    for url, shown in ((f"redis://127.0.0.1:{locked.port}/0", f"127.0.0.1:{locked.port}"),
                       (f"redis://:wrong-pw-42@127.0.0.1:{locked.port}/0", ":***@127.0.0.1")):
        run = chatflow(url, *command)
        assert run.returncode == 2, run.stderr
        assert "refused the connection: it requires a password" in run.stderr
        assert shown in run.stderr
        assert "wrong-pw-42" not in run.stderr + run.stdout
        assert "Traceback" not in run.stderr


def test_the_embedded_server_generates_a_password_keeps_it_private_and_requires_it(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = EmbeddedServer(data_dir=str(data)).start()
    try:
        password = server.password
        assert password and len(password) >= 24
        assert stat.S_IMODE(os.stat(server.password_file).st_mode) == 0o600
        assert server.process is not None
        cmdline = Path(f"/proc/{server.process.pid}/cmdline").read_bytes()
        assert password.encode() not in cmdline  # not visible in `ps`
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=server.port).ping()
        client = redis.Redis.from_url(server.url)
        assert client.ping()
        assert client.config_get("protected-mode") == {"protected-mode": "yes"}
        client.close()
    finally:
        server.stop()
    again = EmbeddedServer(data_dir=str(data)).start()  # the same data directory
    try:
        assert again.password == password
    finally:
        again.stop()


def test_chatflow_up_prints_a_working_url_line_and_never_the_password(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(CHATFLOW_METRICS_PORT="0",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    up = subprocess.Popen([*CHATFLOW, "up", "--data-dir", str(tmp_path / "valkey"), "--port", "0",
                           "--api-port", "0"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in up.stdout or []],
                     daemon=True).start()
    seen: list[str] = []
    try:
        while not seen or not seen[-1].startswith("ready. try: "):
            seen.append(lines.get(timeout=60))
        line = seen[-1].removeprefix("ready. try: ").strip()
        run = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 0, run.stderr
        assert '"ok": true' in run.stdout or '"ok":true' in run.stdout
    finally:
        up.terminate()
        up.wait(timeout=30)
    while not lines.empty():
        seen.append(lines.get_nowait())
    password = (tmp_path / "valkey" / "valkey.password").read_text().strip()
    assert password and password not in "".join(seen)


def test_an_acl_user_and_password_in_the_url_work_and_a_wrong_one_is_refused(
        locked: EmbeddedServer) -> None:
    admin = redis.Redis.from_url(locked.url)
    secret = "acl-" + secrets.token_urlsafe(8)
    admin.acl_setuser("chatflow-worker", enabled=True, passwords=[f"+{secret}"],
                      keys=["*"], channels=["*"], commands=["+@all"])
    admin.close()
    good = f"redis://chatflow-worker:{secret}@127.0.0.1:{locked.port}/0"
    assert chatflow(good, "tools", "list").returncode == 0
    bad = chatflow(f"redis://chatflow-worker:nope-{secret[:3]}x@127.0.0.1:{locked.port}/0",
                   "tools", "list")
    assert bad.returncode == 2 and "chatflow-worker:***@" in bad.stderr


def test_no_repr_of_the_settings_or_the_server_shows_the_password(
        locked: EmbeddedServer) -> None:
    from chatflow.handlers.redis_client import redact
    from chatflow.handlers.settings import Settings

    assert locked.password
    assert locked.password not in repr(Settings(redis_url=locked.url))
    assert locked.password not in repr(locked)
    assert redact(locked.url) == f"redis://default:***@127.0.0.1:{locked.port}/0"
