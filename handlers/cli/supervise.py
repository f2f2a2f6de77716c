"""Supervise the processes of ``chatflow worker --processes N``.

The set lives and dies together: when one process exits on its own (a crash, a
port already taken), the others are stopped and the command exits non-zero, so
the orchestrator (systemd, Kubernetes, Compose) restarts a whole, known-good set
rather than leaving a silently smaller one running. SIGTERM or SIGINT sent to
the supervisor alone (Kubernetes signals PID 1 only) is forwarded to every
process, each of which drains as ``chatflow worker`` does.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType

import structlog

log = structlog.get_logger("chatflow.cli")
STOP_GRACE_S = 30.0


def supervise(procs: Sequence[BaseProcess]) -> int:
    """Start ``procs``, wait until one exits or a stop signal arrives; return the exit code."""
    stopping = False

    def forward(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for p in procs:
            if p.is_alive() and p.pid is not None:
                _signal(p.pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for p in procs:
            p.start()
        first = _first_exit(procs)
        if not stopping:
            log.error("worker process exited; stopping the others", index=procs.index(first),
                      exitcode=first.exitcode)
            for p in procs:
                if p.is_alive() and p.pid is not None:
                    _signal(p.pid, signal.SIGTERM)
        _join_all(procs)
        return 0 if stopping else 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _first_exit(procs: Sequence[BaseProcess]) -> BaseProcess:
    while True:
        ready = wait([p.sentinel for p in procs])
        for p in procs:
            if p.sentinel in ready:
                p.join(0)
                return p


def _join_all(procs: Sequence[BaseProcess]) -> None:
    for p in procs:
        p.join(STOP_GRACE_S)
        if p.is_alive():
            log.error("worker process did not drain in time; killing it", pid=p.pid)
            p.kill()
            p.join()


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it exited since the check
        os.kill(pid, sig)
