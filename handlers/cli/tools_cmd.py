"""``chatflow tools …``: the /tools routes from the command line."""

from __future__ import annotations

import argparse
from typing import Any

from chatflow.runtime.registry.views import tool_view

from ..registry.models import ToolCreate, ToolPatch
from .common import subcommands
from .registry_cmd import Ops, model, read_json, run_ops


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("tools", help="create, save, publish, trash and restore tools")
    cmd = subcommands(p, "tools_command")

    c = cmd("list", "custom tools with status and AI flags", cmd_list)
    c.add_argument("--include-deleted", action="store_true", help="include the trash")
    cmd("native", "native tools", cmd_native)
    cmd("show", "one tool and its published version", cmd_show).add_argument("id")
    c = cmd("create", "create a tool", cmd_create)
    c.add_argument("--id")
    c.add_argument("--name")
    c.add_argument("--description")
    c.add_argument("--native", metavar="NATIVE_NAME", help="a native tool with this nativeName")
    c.add_argument("--file", help="a ToolDefinition JSON ('-': stdin)")
    c = cmd("save", "save a draft", cmd_save)
    c.add_argument("id")
    c.add_argument("--name")
    c.add_argument("--description")
    c.add_argument("--file", help="a ToolDefinition JSON ('-': stdin)")
    for name, help_ in (("publish", "publish the current draft"),
                        ("delete", "move to the trash"), ("restore", "restore from the trash"),
                        ("purge", "delete for good (only from the trash)")):
        cmd(name, help_, cmd_simple).add_argument("id")


async def _views(ops: Ops) -> list[dict[str, Any]]:
    await ops.registry.catch_up()
    return [tool_view(t) for t in ops.registry.state.tools.values()]


def cmd_list(args: argparse.Namespace) -> int:
    async def go(ops: Ops) -> list[dict[str, Any]]:
        return [{k: t[k] for k in ("id", "name", "status", "enabledForAI", "slug",
                                   "publishedToolId", "deletedAt")}
                for t in await _views(ops) if t["kind"] == "custom"
                and (args.include_deleted or not t["deletedAt"])]
    return run_ops(args, go)


def cmd_native(args: argparse.Namespace) -> int:
    async def go(ops: Ops) -> list[dict[str, Any]]:
        return [t for t in await _views(ops) if t["kind"] == "native" and not t["deletedAt"]]
    return run_ops(args, go)


def cmd_show(args: argparse.Namespace) -> int:
    return run_ops(args, lambda ops: ops.tools.view(args.id))


def cmd_create(args: argparse.Namespace) -> int:
    body = model(ToolCreate, {"id": args.id, "name": args.name, "description": args.description,
                              "kind": "native" if args.native else None,
                              "nativeName": args.native, "definition": read_json(args.file)})
    return run_ops(args, lambda ops: ops.tools.create(body))


def cmd_save(args: argparse.Namespace) -> int:
    body = model(ToolPatch, {"name": args.name, "description": args.description,
                             "definition": read_json(args.file)})
    return run_ops(args, lambda ops: ops.tools.save(args.id, body))


def cmd_simple(args: argparse.Namespace) -> int:
    def action(ops: Ops) -> Any:
        return {"publish": ops.tools.publish, "delete": ops.tools.trash,
                "restore": ops.tools.restore, "purge": ops.tools.purge}[args.tools_command](args.id)
    return run_ops(args, action)
