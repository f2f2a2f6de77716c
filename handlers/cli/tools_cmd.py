"""``chatflow tools …``: the /tools routes from the command line, a tool's versions
(``versions``, ``diff``, ``rollback``) and the gated ``publish``."""

from __future__ import annotations

import argparse
from typing import Any

from chatflow.runtime.registry.diff import render
from chatflow.runtime.registry.views import tool_view

from ..registry.gate import publish_gated, rollback_gated
from ..registry.models import ToolCreate, ToolPatch
from ..registry.versions import parse_side
from .common import subcommands
from .registry_cmd import Ops, add_workspace_flag, model, read_json, run_ops, scope_of


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
    c = cmd("publish", "publish the draft as the next version, if its saved test cases pass",
            cmd_publish)
    c.add_argument("id")
    c.add_argument("--note", help="kept in the published version")
    c.add_argument("--force", action="store_true", help="publish past failing test cases")
    add_workspace_flag(c)
    for name, help_ in (("delete", "move to the trash"), ("restore", "restore from the trash"),
                        ("purge", "delete for good (only from the trash)")):
        cmd(name, help_, cmd_simple).add_argument("id")
    c = cmd("versions", "a tool's published versions, newest first", cmd_versions)
    c.add_argument("id")
    add_workspace_flag(c)
    c = cmd("diff", "what changed between two versions (a number or 'draft'), by block and field",
            cmd_diff)
    c.add_argument("id")
    c.add_argument("a", metavar="A")
    c.add_argument("b", metavar="B")
    add_workspace_flag(c)
    c = cmd("rollback", "publish version N's definition again, as the next version, if its "
            "saved test cases pass on it", cmd_rollback)
    c.add_argument("id")
    c.add_argument("n", metavar="N", type=int)
    c.add_argument("--note", help="why (kept in the new version)")
    c.add_argument("--force", action="store_true", help="roll back past failing test cases")
    add_workspace_flag(c)


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
        return {"delete": ops.tools.trash, "restore": ops.tools.restore,
                "purge": ops.tools.purge}[args.tools_command](args.id)
    return run_ops(args, action)


def cmd_publish(args: argparse.Namespace) -> int:
    return run_ops(args, lambda ops: publish_gated(
        ops.tools, ops.case_runner(), args.id, note=args.note, force=args.force,
        scope=scope_of(args)))


def cmd_versions(args: argparse.Namespace) -> int:
    return run_ops(args, lambda ops: ops.versions.list(args.id, scope=scope_of(args)))


def cmd_diff(args: argparse.Namespace) -> int:
    left, right = parse_side(args.a), parse_side(args.b)

    def show(diff: dict[str, Any]) -> int:
        name = {"draft": "the draft"}
        title = (f"tool {args.id}: {name.get(str(left), f'version {left}')} → "
                 f"{name.get(str(right), f'version {right}')}")
        print(render(diff, title))
        return 0

    return run_ops(args, lambda ops: ops.versions.diff(args.id, left, right,
                                                       scope=scope_of(args)), show)


def cmd_rollback(args: argparse.Namespace) -> int:
    def show(done: dict[str, Any]) -> int:
        callers = ", ".join(f"{c['name']} ({c['id']})" for c in done["callers"]) or "none"
        print(f"tool {args.id}: version {args.n} published again as version "
              f"{done['publishedVersion']} ({done['publishedToolId']}); published tools "
              f"that call it: {callers}")
        tests = done["tests"]
        if tests["passed"] or tests["failed"]:
            print(f"saved test cases: {tests['passed']} passed, {tests['failed']} failed"
                  + (" (rolled back anyway: forced)" if tests["forced"] else ""))
        return 0

    return run_ops(args, lambda ops: rollback_gated(
        ops.versions, ops.case_runner(), args.id, args.n, note=args.note, force=args.force,
        scope=scope_of(args)), show)
