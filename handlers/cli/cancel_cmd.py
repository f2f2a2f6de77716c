"""``chatflow cancel EXECUTION``: stop an execution and its whole callTool tree.

The tree's active leaf is aborted with ``execution_cancelled`` (fatal) by
``chatflow.handlers.dataplane.trees``, the one place that ends trees (the reaper, poison
steps and the API's cancel use it too): the caller gets exactly one result.
"""

from __future__ import annotations

import argparse
import asyncio

from ..dataplane.trees import Cancelled, cancel_execution
from .common import add_redis_flag, client_for, settings_from

__all__ = ["Cancelled", "cancel_execution", "register"]


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
