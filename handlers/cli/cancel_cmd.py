"""``chatflow cancel EXECUTION``: stop an execution and its whole callTool tree.

The tree's active leaf is aborted with ``execution_cancelled`` (fatal) through the
same atomic commit as every transition, with no expected version (like the
reaper): the done key makes the cancel and any live step agree, so the caller
gets exactly one result, the cancellation error, and whatever the tree was still
doing commits nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass

from chatflow.runtime import errors
from chatflow.runtime.machine import Machine

from .. import metrics
from ..keys import Keys
from ..redis_client import Client
from ..settings import Settings
from ..store import COMMITTED, Commit
from .common import add_redis_flag, client_for, settings_from
from .executions_cmd import active_leaf, store_for


@dataclass(frozen=True, slots=True)
class Cancelled:
    executionId: str
    rootId: str
    leafId: str
    cancelled: bool
    why: str


async def cancel_execution(client: Client, keys: Keys, exec_id: str, reason: str = "",
                           settings: Settings | None = None) -> Cancelled:
    try:
        partition = keys.partition_of_exec(exec_id)
    except ValueError:
        return Cancelled(exec_id, "", "", False, "not an execution id (N-<uuid>[.n...])")
    settings = settings or Settings()
    store = store_for(client, keys, settings)
    root_id = exec_id.split(".", 1)[0]
    (root,) = await store.load_states([(partition, root_id)])
    if root is None:
        return Cancelled(exec_id, root_id, "", False, "no such execution (or it expired)")
    if root.status == "done":
        return Cancelled(exec_id, root_id, "", False, "already finished")
    leaf = await active_leaf(store, partition, root)
    failure = errors.execution_cancelled(reason or "via chatflow cancel")
    t = Machine(settings.limits()).abort(leaf, failure, int(time.time() * 1000))
    t.expect = None  # the done guard alone decides, as for the reaper
    (verdict,) = await store.commit([Commit(partition, root_id, t, None)])
    metrics.observe_commits([Commit(partition, root_id, t, None)], [verdict])
    if verdict != COMMITTED:
        return Cancelled(exec_id, root_id, leaf.execId, False, "already answered")
    metrics.reaper_action("cancelled")
    return Cancelled(exec_id, root_id, leaf.execId, True, "cancelled")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("cancel", help="stop an execution and its whole callTool tree")
    add_redis_flag(p)
    p.add_argument("execution", help="an execution id (root or nested) from `chatflow executions`")
    p.add_argument("--reason", default="", help="text appended to the cancellation error")
    p.set_defaults(handler=cmd_cancel)


async def _run(args: argparse.Namespace) -> int:
    client, keys = client_for(settings_from(args))
    try:
        outcome = await cancel_execution(client, keys, args.execution, args.reason,
                                         settings_from(args))
    finally:
        await client.aclose()
    if outcome.cancelled:
        print(f"cancelled {outcome.rootId} (active: {outcome.leafId}); "
              "its caller gets an execution_cancelled result")
        return 0
    print(f"not cancelled: {outcome.executionId}: {outcome.why}")
    return 1


def cmd_cancel(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))
