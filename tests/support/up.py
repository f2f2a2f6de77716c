"""A real `chatflow up` in a folder of its own, as a new user starts it, for the tests that need
the whole thing (first start, the CLI beside it, export/import between two deployments)."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

CHATFLOW = str(Path(sys.executable).with_name("chatflow"))


def clean_env() -> dict[str, str]:
    """A new user's shell: no REDIS_URL, no CHATFLOW_* (the suite's CHATFLOW_UP_FILE=0 too),
    this Python's scripts first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k != "REDIS_URL" and not k.startswith("CHATFLOW_")}
    env.update(CHATFLOW_METRICS_PORT="0", CHATFLOW_LOG_FORMAT="json",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


@dataclass
class Up:
    cwd: Path
    port: int
    api_port: int
    env: dict[str, str]
    lines: list[str] = field(default_factory=list)  # its stderr, kept after start-up too

    @property
    def data(self) -> Path:
        return self.cwd / ".chatflow" / "valkey"  # up's default --data-dir, as the README says

    @property
    def url(self) -> str:
        password = (self.data / "valkey.password").read_text().strip()
        return f"redis://default:{password}@127.0.0.1:{self.port}/0"

    def admin(self, retries: int = 0) -> httpx.Client:
        token = (self.data / "admin-api-key").read_text().strip()
        # `up` says "API on ..." (start_up waits for it) once the API answers.
        return httpx.Client(base_url=f"http://127.0.0.1:{self.api_port}/api", timeout=60,
                            headers={"Authorization": f"Bearer {token}"},
                            transport=httpx.HTTPTransport(retries=retries))

    def chatflow(self, *argv: str, extra: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
        """A command pointed at this `up` by its environment (REDIS_URL, the key)."""
        env = {**self.env, "REDIS_URL": self.url, **(extra or {}),
               "CHATFLOW_ENCRYPTION_KEY": (self.data / "encryption.key").read_text().strip()}
        return subprocess.run([CHATFLOW, *argv], env=env, capture_output=True, text=True,
                              timeout=120)


@contextmanager
def start_up(cwd: Path, *argv: str, port: int, api_port: int, env: dict[str, str] | None = None,
             umask: int = -1, ready: Collection[str] = ("worker started", "API on http://"),
             on_line: Callable[[str], None] | None = None, timeout_s: float = 120
             ) -> Iterator[Up]:
    """`chatflow up --port P --api-port A ARGV...` in ``cwd``, yielded once a line containing
    each of ``ready`` was printed; ``on_line`` sees every line first, on the reading thread."""
    running = Up(cwd, port, api_port, env if env is not None else clean_env())
    proc = subprocess.Popen([CHATFLOW, "up", "--port", str(port), "--api-port", str(api_port),
                             *argv], cwd=cwd, env=running.env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, umask=umask)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stderr or []:
            if on_line is not None:
                on_line(line)
            running.lines.append(line)
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        waiting = set(ready)
        while waiting:
            try:
                line = lines.get(timeout=timeout_s)
            except queue.Empty:
                pytest.fail(f"chatflow up did not start in {timeout_s:g} s:\n"
                            + "".join(running.lines[-20:]))
            waiting = {w for w in waiting if w not in line}
        yield running
    finally:
        proc.terminate()
        proc.wait(timeout=30)
