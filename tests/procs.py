"""Worker processes for tests that kill them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


def spawn_worker(url: str, prefix: str, **env: str) -> subprocess.Popen[bytes]:
    environ = {**os.environ, "REDIS_URL": url, "CHATFLOW_PREFIX": prefix,
               "CHATFLOW_LOG_LEVEL": "WARNING", "CHATFLOW_METRICS_PORT": "0",
               **{f"CHATFLOW_{k.upper()}": v for k, v in env.items()}}
    code = "from chatflow.handlers.cli import main; main(['worker'])"
    return subprocess.Popen([sys.executable, "-c", code],
                            env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()


@contextmanager
def worker_process(url: str, prefix: str, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = spawn_worker(url, prefix, **env)
    try:
        yield proc
    finally:
        kill(proc)
