"""Ending a callTool tree from outside the state machine: the one place that does it.

Four paths end a tree before it answers on its own: the deadline reaper, a poison
step (dead-lettered after ``max_deliveries``), ``chatflow cancel`` and
``POST /api/executions/{id}/cancel``. Each follows the tree down to the execution
that runs now, aborts it with a fatal error, and commits through the same atomic
commit as every transition, with no expected version: the tree's done key alone
decides, so the caller gets exactly one answer and whatever the tree was still
doing commits nothing.

Each tree ended here is counted in Redis (``Keys.trees_ended``, a hash reason ->
count), not in the calling process's registry: a cancel from the CLI or the API
then shows on every worker's ``/metrics`` (``chatflow_trees_ended_total``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from chatflow.runtime import errors
from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.machine import Machine
from chatflow.runtime.state import ExecState

from ..keys import Keys
from ..operations import metrics
from ..redis_client import Client
from ..settings import Settings
from .store import COMMITTED, Commit, Store

Reason = Literal["deadline_timeout", "dead_lettered", "cancelled"]  # metrics.TREE_END_REASONS


@dataclass(frozen=True, slots=True)
class End:
    """A tree to end: any execution of it (``state``), in its root's partition."""

    partition: int
    state: ExecState
    failure: ToolFailure
    reason: Reason


@dataclass(frozen=True, slots=True)
class Ended:
    rootId: str
    leafId: str
    committed: bool


Verdict = Literal["cancelled", "invalid_id", "not_found", "finished"]


@dataclass(frozen=True, slots=True)
class Cancelled:
    executionId: str
    rootId: str
    leafId: str
    cancelled: bool
    why: str
    verdict: Verdict = "cancelled"


def store_for(client: Client, keys: Keys, settings: Settings | None = None) -> Store:
    s = settings or Settings()
    return Store(client, keys, state_ttl_s=s.state_ttl_s, dedup_ttl_s=s.dedup_ttl_s,
                 marker_ttl_s=s.marker_ttl_s)


async def active_leaf(store: Store, partition: int, state: ExecState) -> ExecState:
    """Follow a waiting execution down its callTool chain to the one that runs now.

    A waiting parent's active child is ``<parent>.<version - 1>`` (``Machine.spawn``)."""
    for _ in range(64):  # deeper than any allowed tree
        if state.status != "waiting":
            break
        (child,) = await store.load_states([(partition, f"{state.execId}.{state.version - 1}")])
        if child is None or child.status == "done":
            break
        state = child
    return state


async def end_trees(store: Store, machine: Machine, ends: list[End],
                    now: int | None = None) -> list[Ended]:
    """Abort each tree at its active execution; one pipelined commit for all of them."""
    if not ends:
        return []
    at = now if now is not None else int(time.time() * 1000)
    commits: list[Commit] = []
    leaves: list[str] = []
    for end in ends:
        leaf = await active_leaf(store, end.partition, end.state)
        leaves.append(leaf.execId)
        t = machine.abort(leaf, end.failure, at)
        t.expect = None  # the done guard alone decides: the answer must go out once
        commits.append(Commit(end.partition, end.state.rootId, t, None))
    verdicts = await store.commit(commits)
    metrics.observe_commits(commits, verdicts)
    counts = Counter(end.reason for end, v in zip(ends, verdicts, strict=True) if v == COMMITTED)
    if counts:
        async with store.client.pipeline(transaction=False) as pipe:
            for reason, n in counts.items():
                pipe.hincrby(store.keys.trees_ended, reason, n)
            await pipe.execute()
    return [Ended(end.state.rootId, leaf, v == COMMITTED)
            for end, leaf, v in zip(ends, leaves, verdicts, strict=True)]


async def cancel_execution(client: Client, keys: Keys, exec_id: str, reason: str = "",
                           settings: Settings | None = None, via: str = "chatflow cancel",
                           visible: Callable[[ExecState], bool] | None = None) -> Cancelled:
    """Cancel the tree of ``exec_id`` (its root or any nested execution).

    ``visible`` sees the root's state: a tree it refuses (another workspace's) is reported
    exactly like a missing one."""
    try:
        partition = keys.partition_of_exec(exec_id)
    except ValueError:
        return Cancelled(exec_id, "", "", False, "not an execution id (N-<uuid>[.n...])",
                         "invalid_id")
    if not 0 <= partition < keys.partitions:
        return Cancelled(exec_id, "", "", False, "no such execution (or it expired)", "not_found")
    settings = settings or Settings()
    store = store_for(client, keys, settings)
    root_id = exec_id.split(".", 1)[0]
    (root,) = await store.load_states([(partition, root_id)])
    if root is None and visible is None and await client.exists(keys.log(partition, root_id)):
        # A tree answered in the hop that took its command keeps only its log. (Through the
        # API, whose caller sees only its workspace's trees, it reads like a missing one.)
        return Cancelled(exec_id, root_id, "", False, "already finished", "finished")
    if root is None or (visible is not None and not visible(root)):
        return Cancelled(exec_id, root_id, "", False, "no such execution (or it expired)",
                         "not_found")
    if root.status == "done":
        return Cancelled(exec_id, root_id, "", False, "already finished", "finished")
    failure = errors.execution_cancelled(reason or f"via {via}")
    (ended,) = await end_trees(store, Machine(settings.limits()),
                               [End(partition, root, failure, "cancelled")])
    if not ended.committed:
        return Cancelled(exec_id, root_id, ended.leafId, False, "already answered", "finished")
    return Cancelled(exec_id, root_id, ended.leafId, True, "cancelled")


async def trees_ended(client: Client, keys: Keys) -> dict[str, int]:
    """Every reason's count, zeros included, as stored in Redis."""
    raw = await client.hgetall(keys.trees_ended)
    stored = {k.decode() if isinstance(k, bytes) else str(k): int(v) for k, v in raw.items()}
    return {reason: stored.get(reason, 0) for reason in metrics.TREE_END_REASONS}
