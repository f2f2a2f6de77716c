"""Argument parsing and dispatch; each command lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from chatflow.runtime.errors import ChatflowError

from . import (
    api_cmd,
    cancel_cmd,
    exec_cmd,
    executions_cmd,
    keys_cmd,
    mcp_cmd,
    projections_cmd,
    publish_cmd,
    registry_cmd,
    replay_cmd,
    run_cmd,
    servers_cmd,
    stats_cmd,
    tail_cmd,
    tools_cmd,
)

Command = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chatflow",
        description="chatflow-agent: tools as event-sourced mini-flows on Redis Streams.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (run_cmd, exec_cmd, tail_cmd, publish_cmd, stats_cmd, executions_cmd,
                   cancel_cmd, replay_cmd, projections_cmd, api_cmd, registry_cmd,
                   tools_cmd, servers_cmd, keys_cmd, mcp_cmd):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Command = args.handler
    try:
        return handler(args)
    except ChatflowError as exc:
        print(f"chatflow: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
