"""Runs prepared jobs in batches and recovers from runaway or memory-hungry scripts.

A batch runs in one eval with a time budget of ``max(job timeouts) + slack``. If the eval
is terminated (time budget, memory limit, engine error), the finished outcomes are read
back from the runner, the context is replaced by a fresh one, and:

* the job that was running is blamed if it is the only one, if it was killed by the memory
  limit, or if it had already used its own timeout; otherwise it is handed back unrun
  (``None``), like the jobs after it, so the scheduler can serve other tools first (the
  first job of a batch always gets its full time, so every batch makes progress);
* if every job had returned, deferred work (promise callbacks, which V8 runs when the
  batch's eval unwinds) ran away: a lone job is blamed, a batch reruns one job at a time,
  so the job that queued the runaway callback gets ``script_timeout`` and no other;
* if the progress cannot be read, every job of the batch reruns alone.

The executor and its engine live on one thread: a lane thread (``_lane.py``) or the worker
process's main thread (``_worker.py``). Everything here is synchronous.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from ._codec import PreparedJob, Progress, decode_outcomes
from ._engine import EngineFailure, EngineInterrupted, V8Engine
from ._types import SCRIPT_ERROR, ScriptLimits, ScriptOutcome, memory_outcome, timeout_outcome

BUDGET_SLACK_S = 0.05
MIN_SETTLE_S = 0.01
_DEFERRED_TIMEOUT = EngineFailure("timeout", "a promise callback ran past the time limit")


@dataclass(frozen=True, slots=True)
class _Segment:
    indices: list[int]
    retried: bool = False


class BatchExecutor:
    """Owns the V8 engine of one lane; executes batches one at a time (the lane serialises)."""

    def __init__(self, limits: ScriptLimits) -> None:
        self._limits = limits
        self._engine: V8Engine | None = None
        self._closing = False  # set by interrupt(), from the thread closing the lane
        self.contexts_created = 0
        self.evals = 0

    def execute(self, jobs: Sequence[PreparedJob]) -> list[ScriptOutcome | None]:
        """Outcomes in job order; ``None`` for a job not run (hand it back to the queue)."""
        results: list[ScriptOutcome | None] = [None] * len(jobs)
        segments: deque[_Segment] = deque([_Segment(list(range(len(jobs))))])
        while segments:
            if self._closing:
                raise EngineInterrupted()
            segment = segments.popleft()
            self._run_segment(jobs, segment, results, segments)
        return results

    def _run_segment(
        self,
        jobs: Sequence[PreparedJob],
        segment: _Segment,
        results: list[ScriptOutcome | None],
        segments: deque[_Segment],
    ) -> None:
        engine = self._current_engine()
        batch = [jobs[i] for i in segment.indices]
        budget = max(job.timeout_ms for job in batch) / 1000 + BUDGET_SLACK_S
        self.evals += 1
        try:
            text = engine.run(engine.cache.payload(batch), budget, MIN_SETTLE_S)
            if text is None:
                self._discard_engine()
                self._deferred_ran_away(jobs, segment.indices, results, segments)
                return
        except EngineFailure as failure:
            progress = engine.progress()
            seq = engine.seq
            if (failure.kind == "timeout" and progress is not None
                    and engine.ran_out_of_memory(self._limits.max_memory_bytes)):
                failure = EngineFailure("memory", failure.message)
            self._discard_engine()
            if (progress is None or progress.seq != seq) and not segment.retried:
                # Unknown progress or the batch never started: deferred work of an earlier
                # batch (a promise callback) can hold the isolate after that batch returned.
                # Run the whole segment once more on the fresh context.
                segments.appendleft(_Segment(segment.indices, retried=True))
                return
            self._recover(failure, progress, jobs, segment.indices, results, segments)
            return
        for index, outcome in zip(segment.indices, decode_outcomes(text), strict=True):
            results[index] = outcome

    def _recover(
        self,
        failure: EngineFailure,
        progress: Progress | None,
        jobs: Sequence[PreparedJob],
        segment: list[int],
        results: list[ScriptOutcome | None],
        segments: deque[_Segment],
    ) -> None:
        finished = len(progress.done) if progress is not None else -1
        known = progress is not None and (
            finished == len(segment) or (progress.current == finished < len(segment))
        )
        if progress is None or not known:
            if len(segment) == 1:
                results[segment[0]] = self._blame(failure, jobs[segment[0]])
            else:
                segments.extendleft(_Segment([i]) for i in reversed(segment))
            return
        if finished == len(segment):
            self._deferred_ran_away(jobs, segment, results, segments, failure)
            return
        for index, outcome in zip(segment, progress.done, strict=False):
            results[index] = outcome
        # segment[finished + 1:] stay None: handed back unrun.
        current = segment[finished]
        job = jobs[current]
        used_its_time = progress.elapsed_ms >= job.timeout_ms
        if (
            len(segment) == 1
            or failure.kind == "memory"
            or (failure.kind == "timeout" and used_its_time)
        ):
            results[current] = self._blame(failure, job)
        # else: cut short by the shared budget before its own timeout; it stays None too.

    def _deferred_ran_away(
        self,
        jobs: Sequence[PreparedJob],
        segment: list[int],
        results: list[ScriptOutcome | None],
        segments: deque[_Segment],
        failure: EngineFailure = _DEFERRED_TIMEOUT,
    ) -> None:
        """Every job returned, then a promise callback one of them queued ran away."""
        if len(segment) == 1:
            results[segment[0]] = self._blame(failure, jobs[segment[0]])
        else:  # find whose callback it was: each job alone, on a fresh context
            segments.extendleft(_Segment([i], retried=True) for i in reversed(segment))

    def _blame(self, failure: EngineFailure, job: PreparedJob) -> ScriptOutcome:
        if failure.kind == "timeout":
            return timeout_outcome(job.timeout_ms)
        if failure.kind == "memory":
            return memory_outcome(self._limits.max_memory_bytes)
        return ScriptOutcome.failure(SCRIPT_ERROR, f"script engine error: {failure.message}")

    def _current_engine(self) -> V8Engine:
        engine = self._engine
        if engine is None:
            engine = V8Engine.start(self._limits.max_memory_bytes)
            self._engine = engine
            self.contexts_created += 1
            if self._closing:  # interrupt() ran before the engine was published
                engine.interrupt()
        return engine

    def _discard_engine(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()

    def interrupt(self) -> None:
        """From any thread: stop the running batch (EngineInterrupted) and any later one."""
        self._closing = True
        engine = self._engine
        if engine is not None:
            engine.interrupt()

    def close(self) -> None:
        """Free the engine; must run on the thread that created it."""
        self._discard_engine()
