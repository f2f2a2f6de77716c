"""``chatflow fork EXECUTION_ID --from BLOCK [--var NAME=VALUE] [--definition FILE]``: run a
finished execution again from one of its blocks (handlers/history/fork.py) and print the
answer. Reads the run history (CHATFLOW_HISTORY_URL) and publishes to REDIS_URL."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from chatflow.runtime.errors import ConfigurationError

from .common import add_redis_flag, client_for, history_url, settings_from
from .common import variables as set_variables


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("fork", help="run a finished execution again from one of its blocks")
    add_redis_flag(p)
    p.add_argument("execution_id")
    p.add_argument("--from", dest="from_block", required=True, help="the block to start at")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="a variable laid over the run's (repeatable; VALUE as JSON if it "
                        "parses); a dotted NAME (order.total=40) sets that field of the run's "
                        "object, keeping its others")
    p.add_argument("--definition", help="a JSON file: the definition to run instead")
    p.add_argument("--history-url", help="overrides CHATFLOW_HISTORY_URL")
    p.add_argument("--no-wait", action="store_true", help="print the command and return")
    p.set_defaults(handler=cmd_fork)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


async def _run(args: argparse.Namespace) -> int:
    from ..history.db import engine_for
    from ..history.fork import ForkRefused, start_fork, variables_at
    from ..history.queries import get_run
    from ..interfaces.client import wait_results
    from ..registry.scope import shell_grant

    settings = settings_from(args)
    url = history_url(args, settings, "forks start from the run history")
    definition = None
    if args.definition:
        try:
            definition = json.loads(Path(args.definition).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"--definition {args.definition}: {exc}") from exc
    engine = engine_for(url)
    try:
        run = await get_run(engine, None, args.execution_id)  # the operator's shell
    finally:
        await engine.dispose()
    if run is None:
        raise ConfigurationError(f"no run {args.execution_id!r} in the history")
    # A dotted --var changes one field of an object the run had at that block, the rest kept.
    variables = set_variables(args.var, "--var", variables_at(run["steps"], args.from_block),
                              _value)
    client, keys = client_for(settings)
    try:
        try:
            fork = await start_fork(client, keys, run, grant=shell_grant(str(run["workspace"])),
                                    from_block=args.from_block,
                                    variables=variables, definition=definition,
                                    ttl_s=settings.state_ttl_s,
                                    reply_allowed=settings.reply_allowed())
        except ForkRefused as exc:
            raise ConfigurationError(str(exc)) from exc
        if args.no_wait:
            print(json.dumps({"commandId": fork.command.commandId, "replyTo": fork.reply_to}))
            return 0
        found = await wait_results(client, fork.reply_to, {fork.command.commandId},
                                   after=b"0-0", timeout_s=settings.tool_timeout_ms / 1000 + 10)
        if fork.reply_to != keys.results:
            await client.delete(fork.reply_to)
    finally:
        await client.aclose()
    import msgspec

    result = found[fork.command.commandId][0]
    print(json.dumps({**msgspec.to_builtins(result),
                      "forkedFrom": {"executionId": args.execution_id,
                                     "blockId": args.from_block}}, ensure_ascii=False))
    return 0 if result.ok else 1


def cmd_fork(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))
