"""Runs batches in a worker process, so that even a V8 abort cannot take the caller down.

V8 deliberately aborts the whole process on a few oversized allocations (for example
``'x'.repeat(2**29 - 30).split('')``: "Fatal JavaScript invalid size error"), which no
heap limit prevents. The worker owns the V8 context; this side restarts it on EOF and
reruns the batch one job at a time to find the job that killed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence

from ..errors import ChatflowError
from ._codec import PreparedJob
from ._protocol import HEADER, decode_response, encode_request
from ._types import SCRIPT_ERROR, SCRIPT_MEMORY, ScriptLimits, ScriptOutcome

# Beyond the worker's own per-batch time budgets, how long before it counts as hung.
GUARD_SLACK_S = 5.0
# How long a new worker may take to say hello (start Python, import, set up V8). Apart from
# the batch guard: on a loaded machine a start took over 5 s, and the first batch was
# reported as a crash of the script ("script engine crashed").
STARTUP_TIMEOUT_S = 60.0
_STDERR_TAIL = 8192


class WorkerCrashed(ChatflowError):
    """Raised when the worker exited (or hung) before answering."""


class WorkerProcess:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self.loop = asyncio.get_running_loop()
        self.contexts_created = 0
        self.retire = False  # the worker asked to be replaced (it holds a stuck context)
        self._stderr: deque[bytes] = deque()
        self._stderr_task = self.loop.create_task(self._drain_stderr())

    @classmethod
    async def start(cls, limits: ScriptLimits, env: Mapping[str, str]) -> WorkerProcess:
        """``env`` is the child's whole environment: the caller decides, nothing is inherited."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "chatflow.runtime.sandbox._worker",
            str(limits.timeout_ms),
            str(limits.max_memory_bytes),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            limit=2**31,
        )
        worker = cls(proc)
        await worker._hello()
        return worker

    async def _hello(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            async with asyncio.timeout(STARTUP_TIMEOUT_S):
                header = await stdout.readexactly(HEADER.size)
                decode_response(await stdout.readexactly(HEADER.unpack(header)[0]))
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
            self.kill()
            await asyncio.wait({self._stderr_task}, timeout=1.0)
            raise WorkerCrashed(f"did not start: {self.stderr_tail()}") from exc

    async def execute(self, jobs: Sequence[PreparedJob]) -> list[ScriptOutcome | None]:
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        guard = sum(job.timeout_ms for job in jobs) / 1000 + GUARD_SLACK_S
        try:
            stdin.write(encode_request(jobs))
            async with asyncio.timeout(guard):
                await stdin.drain()
                header = await stdout.readexactly(HEADER.size)
                body = await stdout.readexactly(HEADER.unpack(header)[0])
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
            self.kill()
            await asyncio.wait({self._stderr_task}, timeout=1.0)  # collect V8's last words
            raise WorkerCrashed(self.stderr_tail()) from exc
        self.contexts_created, outcomes, self.retire = decode_response(body)
        return outcomes

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc.returncode is None

    async def _drain_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        size = 0
        while chunk := await stream.read(4096):
            self._stderr.append(chunk)
            size += len(chunk)
            while size > _STDERR_TAIL and len(self._stderr) > 1:
                size -= len(self._stderr.popleft())

    def stderr_tail(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")

    def kill(self) -> None:
        if self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
        stdin = self._proc.stdin
        if stdin is not None and not self.loop.is_closed():
            stdin.close()

    async def wait_closed(self) -> None:
        """Reap the killed child, so its transport closes inside the loop that owns it."""
        if self.loop is not asyncio.get_running_loop():
            return
        with contextlib.suppress(ProcessLookupError):
            await self._proc.wait()
        await asyncio.wait({self._stderr_task}, timeout=1.0)


class ProcessExecutor:
    """Same interface as BatchExecutor, with the engine in a restartable child process."""

    def __init__(self, limits: ScriptLimits, env: Mapping[str, str]) -> None:
        self._limits = limits
        self._env = dict(env)
        self._worker: WorkerProcess | None = None
        self._contexts_before = 0  # contexts created by workers that are gone
        self._discarded: list[WorkerProcess] = []  # killed, not yet reaped
        self.evals = 0
        self.workers_started = 0
        self.startup_s = 0.0  # time spent starting workers: not the scripts' time

    @property
    def contexts_created(self) -> int:
        worker = self._worker
        return self._contexts_before + (worker.contexts_created if worker else 0)

    @property
    def pid(self) -> int | None:
        """The worker process's id, once started (tests read its /proc entry)."""
        worker = self._worker
        return worker.pid if worker is not None else None

    async def execute(self, jobs: Sequence[PreparedJob]) -> list[ScriptOutcome | None]:
        try:
            worker = await self._current_worker()
        except WorkerCrashed as crash:  # no job's fault: each gets the reason
            return [ScriptOutcome.failure(
                SCRIPT_ERROR, f"script engine failed to start ({str(crash)[:200]})")] * len(jobs)
        self.evals += 1
        try:
            outcomes = await worker.execute(jobs)
            if worker.retire:
                self._discard_worker()
            return outcomes
        except WorkerCrashed as crash:
            self._discard_worker()
            if len(jobs) == 1:
                return [_crash_outcome(str(crash))]
        alone: list[ScriptOutcome | None] = []
        for job in jobs:  # find the job that killed the worker
            alone.extend(await self.execute([job]))
        return alone

    async def _current_worker(self) -> WorkerProcess:
        worker = self._worker
        if worker is not None and (
            not worker.alive or worker.loop is not asyncio.get_running_loop()
        ):
            self._discard_worker()
            worker = None
        if worker is None:
            began = time.monotonic()
            try:
                worker = await WorkerProcess.start(self._limits, self._env)
            finally:
                self.startup_s += time.monotonic() - began
            self._worker = worker
            self.workers_started += 1
        return worker

    def _discard_worker(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            self._contexts_before += worker.contexts_created
            worker.kill()
            self._discarded = [w for w in self._discarded if w.alive] + [worker]

    def close(self) -> None:
        self._discard_worker()

    async def aclose(self) -> None:
        self._discard_worker()
        discarded, self._discarded = self._discarded, []
        for worker in discarded:
            await worker.wait_closed()


def _crash_outcome(stderr_tail: str) -> ScriptOutcome:
    if "invalid size" in stderr_tail or "out of memory" in stderr_tail.lower():
        return ScriptOutcome.failure(
            SCRIPT_MEMORY, "script memory limit exceeded (oversized allocation aborted the engine)"
        )
    return ScriptOutcome.failure(SCRIPT_ERROR, "script engine crashed while running the script")
