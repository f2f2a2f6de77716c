"""``chatflow export DIR`` and ``chatflow import DIR``: a workspace's tools, servers and
credentials as files, and back (docs/registry.md "Export and import")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import add_redis_flag


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("export", help="write a workspace's tools, servers and credentials to "
                                      "files")
    add_redis_flag(p)
    p.add_argument("dir", metavar="DIR", help="the folder (made if missing)")
    p.add_argument("--workspace", default="default", help="the workspace (default: default)")
    p.set_defaults(handler=cmd_export)
    p = sub.add_parser("import", help="apply exported files to a workspace, after showing the "
                                      "plan")
    add_redis_flag(p)
    p.add_argument("dir", metavar="DIR", help="a folder `chatflow export` wrote")
    p.add_argument("--workspace", default="default", help="the workspace (default: default)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.add_argument("--publish", action="store_true",
                   help="also publish the tools the files say are published (through the "
                        "publish gate)")
    p.set_defaults(handler=cmd_import)


def cmd_export(args: argparse.Namespace) -> int:
    from ..registry.transfer import export_files, write_export
    from .registry_cmd import Ops, run_ops

    async def go(ops: Ops) -> dict[str, str]:
        await ops.registry.catch_up()
        return export_files(ops.registry.state, args.workspace)

    def show(files: dict[str, str]) -> int:
        written = write_export(Path(args.dir), files)
        counts = {kind: sum(1 for p in written if p.startswith(f"{kind}/"))
                  for kind in ("tools", "servers", "credentials")}
        print(f"exported workspace {args.workspace} to {args.dir}: "
              + ", ".join(f"{n} {kind}" for kind, n in counts.items()))
        return 0

    return run_ops(args, go, show)


def cmd_import(args: argparse.Namespace) -> int:
    from ..registry.importing import Importer, Step, apply, load, needed_secrets
    from ..settings import secret_values
    from .registry_cmd import Ops, run_ops, scope_of

    files = load(Path(args.dir))

    async def go(ops: Ops) -> list[Step]:
        importer = Importer(ops.tools, ops.servers, ops.credentials, ops.cases(),
                            ops.case_runner(), scope_of(args),
                            secret_values(needed_secrets(files)))
        steps = await importer.plan(files, args.publish)
        for step in steps:
            print(step.line())
        refused = [s for s in steps if s.action == "refused"]
        if refused or args.dry_run:
            return steps
        await apply(steps)
        return steps

    def show(steps: list[Any]) -> int:
        counts: dict[str, int] = {}
        for step in steps:
            counts[step.action] = counts.get(step.action, 0) + 1
        summary = ", ".join(f"{n} {action}" for action, n in sorted(counts.items()))
        if any(s.action == "refused" for s in steps):
            print(f"nothing applied: {summary}", file=sys.stderr)
            return 1
        print(f"{'plan only (--dry-run)' if args.dry_run else 'applied'}: {summary}")
        return 0

    return run_ops(args, go, show)
