"""The one starter of ``chatflow worker`` subprocesses in the tests (killable, like production).

``start_worker`` runs the console entry point in a fresh interpreter with the test's Valkey
and prefix in its environment; the options a test passes become ``CHATFLOW_*`` variables.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

WorkerProc = subprocess.Popen[bytes]
Output = int | IO[bytes] | None

QUIET = {"CHATFLOW_LOG_LEVEL": "WARNING", "CHATFLOW_METRICS_PORT": "0"}


def start_worker(url: str, prefix: str, *args: str, env: dict[str, str] | None = None,
                 stdout: Output = subprocess.DEVNULL, stderr: Output = subprocess.DEVNULL,
                 new_session: bool = False, **settings: str) -> WorkerProc:
    """``chatflow worker ARGS`` on ``url``/``prefix``; ``settings`` are ``CHATFLOW_<NAME>`` values."""
    environ = {**os.environ, **QUIET, "REDIS_URL": url, "CHATFLOW_PREFIX": prefix,
               **(env or {}), **{f"CHATFLOW_{k.upper()}": v for k, v in settings.items()}}
    code = f"import sys; from chatflow.handlers.cli import main; sys.exit(main({['worker', *args]!r}))"
    return subprocess.Popen([sys.executable, "-c", code], env=environ, stdout=stdout, stderr=stderr,
                            start_new_session=new_session)


def kill(proc: WorkerProc) -> None:
    """SIGKILL: no chance to ack, flush or say goodbye."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()


def stop(proc: WorkerProc, timeout_s: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if it does not exit within ``timeout_s``."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill(proc)


@contextmanager
def worker_process(url: str, prefix: str, *args: str, **settings: str) -> Iterator[WorkerProc]:
    proc = start_worker(url, prefix, *args, **settings)
    try:
        yield proc
    finally:
        kill(proc)
