"""Argument parsing and dispatch; each command lives in its own module, imported on demand.

``chatflow --help`` lists the commands from ``COMMANDS`` without importing any of them, and
``chatflow exec ...`` imports only exec_cmd (whose own heavy imports wait inside the command):
start-up stays well under half a second. tests/ops/test_cli_startup.py keeps the table in
step with the modules.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from chatflow.runtime.errors import ChatflowError

from .unreachable import unreachable_message

Command = Callable[[argparse.Namespace], int]

# command -> (module under chatflow.handlers.cli, one-line help). A module may register
# several commands (run_cmd: up and worker); its register() gives each its full parser.
COMMANDS: dict[str, tuple[str, str]] = {
    "up": ("run_cmd", "everything in one process (embedded Valkey without REDIS_URL)"),
    "worker": ("run_cmd", "the stream workers, against REDIS_URL"),
    "exec": ("exec_cmd", "publish one executeTool command and print its result"),
    "tail": ("tail_cmd", "follow a contact's debug stream"),
    "publish": ("publish_cmd", "validate a tool definition and publish it"),
    "stats": ("stats_cmd", "runs, average duration and success rate over 7 days"),
    "executions": ("executions_cmd", "list the executions in flight"),
    "cancel": ("cancel_cmd", "stop an execution and its whole callTool tree"),
    "replay": ("replay_cmd", "rebuild an execution from its event stream and check it"),
    "projections": ("projections_cmd", "the execution log projection (7-day tool metrics)"),
    "history": ("history_cmd", "the run history database: migrations"),
    "fork": ("fork_cmd", "run a finished execution again from one of its blocks"),
    "api": ("api_cmd", "serve the HTTP API (tools, servers, test runs)"),
    "registry": ("registry_cmd", "the tool registry's log and projections"),
    "tools": ("tools_cmd", "create, save, publish, trash and restore tools"),
    "test": ("cases_cmd", "run a workspace's saved test cases (JUnit XML for CI)"),
    "export": ("transfer_cmd", "write a workspace's tools, servers and credentials to files"),
    "import": ("transfer_cmd", "apply exported files to a workspace, after showing the plan"),
    "servers": ("servers_cmd", "integration servers and their endpoints"),
    "keys": ("keys_cmd", "API keys (create, list, revoke); rotate-encryption of secrets"),
    "mcp": ("mcp_cmd", "serve a workspace's AI tools to MCP clients (stdio or HTTP)"),
}


def _chosen(argv: Sequence[str]) -> str | None:
    """The command named on the command line, if any (the first word that is not a flag)."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the module of the command in ``argv`` is imported (``None``: all)."""
    parser = argparse.ArgumentParser(
        prog="chatflow",
        description="chatflow-agent: tools as event-sourced mini-flows on Redis Streams.")
    sub = parser.add_subparsers(dest="command", required=True)
    chosen = None if argv is None else _chosen(argv)
    wanted = [m for m in dict.fromkeys(module for module, _ in COMMANDS.values())
              if argv is None or (chosen is not None and m == COMMANDS[chosen][0])]
    for module in wanted:
        importlib.import_module(f"{__package__}.{module}").register(sub)
    for name, (_module, help_) in COMMANDS.items():
        if name not in sub.choices:  # listed in --help; parsed only when chosen
            sub.add_parser(name, help=help_)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(words).parse_args(words)
    handler: Command = args.handler
    try:
        return handler(args)
    except ChatflowError as exc:
        print(f"chatflow: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        from ..redis_client import auth_failure, is_auth_refusal
        from ..settings import configured_redis_url

        found = getattr(args, "up_file", None)  # the URL came from a `chatflow up`'s file
        url = (getattr(args, "redis_url", None) or (found.redis_url() if found else None)
               or configured_redis_url())
        if is_auth_refusal(exc):
            print(f"chatflow: {auth_failure(url)}", file=sys.stderr)
            return 2
        message = unreachable_message(exc, url)
        if message is None:
            raise
        if found is not None:
            message += f" (the URL is the one in {found.who()})"
        print(f"chatflow: {message}", file=sys.stderr)
        return 3
