"""``chatflow test [TOOL ...] [--junit FILE]``: run a workspace's saved test cases.

Each tool's cases run in this process against its draft (``--published``: its published
version), with their mocks, exactly as ``POST /api/tools/{id}/tests/run`` runs them. One line
per case, the differences of each failure under it; exit 1 when any case fails, so CI can
gate on it, and ``--junit FILE`` writes JUnit XML (one testsuite per tool).
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from .common import add_redis_flag


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("test", help="run a workspace's saved test cases (JUnit XML for CI)")
    add_redis_flag(p)
    p.add_argument("tools", nargs="*", metavar="TOOL",
                   help="tool ids (default: every tool of the workspace that has cases)")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    p.add_argument("--published", action="store_true",
                   help="run against each tool's published version instead of its draft")
    p.add_argument("--workspace", default="default", help="the workspace (default: default)")
    p.set_defaults(handler=cmd_test)


def cmd_test(args: argparse.Namespace) -> int:
    from .registry_cmd import Ops, run_ops, scope_of

    async def go(ops: Ops) -> list[dict[str, Any]]:
        from ..registry.errors import Invalid
        from ..registry.scope import shell_grant
        from ..registry.tools import get_tool

        scope = scope_of(args)
        await ops.registry.catch_up()
        state = ops.registry.state
        wanted = list(args.tools) or sorted(
            tool_id for tool_id, cases in state.cases.items() if cases
            and (t := state.tool_in(tool_id, scope.workspace)) is not None
            and not t.get("deletedAt"))
        runner = ops.case_runner()
        reports = []
        for tool_id in wanted:
            tool = get_tool(state, tool_id, workspace=scope.workspace)
            version = (tool.get("publishedTool") or {}).get("version") if args.published else None
            if args.published and version is None:
                raise Invalid(f"tool {tool_id!r} is not published (run without --published)")
            reports.append({**await runner.run(tool_id, grant=shell_grant(scope.workspace),
                                               version=version),
                            "name": tool.get("name", "")})
        return reports

    return run_ops(args, go, lambda reports: _show(args, reports))


def _show(args: argparse.Namespace, reports: list[dict[str, Any]]) -> int:
    if not reports:
        print("no saved test cases in this workspace", file=sys.stderr)
    failed = 0
    for report in reports:
        against = "draft" if report["against"] == "draft" else f"version {report['against']}"
        print(f"{report['toolId']} ({report['name']}), {against}: {report['passed']} passed, "
              f"{report['failed']} failed")
        for case in report["cases"]:
            print(f"  {'PASS' if case['passed'] else 'FAIL'} {case['id']}  {case['name']}")
            for difference in case["differences"]:
                print(f"       {_difference(difference)}")
        failed += report["failed"]
    if args.junit:
        Path(args.junit).write_bytes(junit(reports))
    return 1 if failed else 0


def _difference(d: dict[str, Any]) -> str:
    def shown(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 200 else text[:199] + "…"

    note = f" ({d['note']})" if d.get("note") else ""
    return f"{d['field']}: expected {shown(d['expected'])}, got {shown(d['actual'])}{note}"


def junit(reports: list[dict[str, Any]]) -> bytes:
    """JUnit XML: a testsuite per tool, a testcase per case, a failure per failing case."""
    total = sum(len(r["cases"]) for r in reports)
    failures = sum(r["failed"] for r in reports)
    root = ET.Element("testsuites", name="chatflow", tests=str(total), failures=str(failures))
    for report in reports:
        suite = ET.SubElement(root, "testsuite", name=report["toolId"],
                              tests=str(len(report["cases"])), failures=str(report["failed"]),
                              errors="0", skipped="0",
                              time=_seconds(sum(c["durationMs"] for c in report["cases"])))
        for case in report["cases"]:
            item = ET.SubElement(suite, "testcase", classname=report["toolId"],
                                 name=f"{case['id']}: {case['name']}",
                                 time=_seconds(case["durationMs"]))
            if not case["passed"]:
                lines = [_difference(d) for d in case["differences"]]
                failure = ET.SubElement(item, "failure", message=lines[0] if lines else "failed",
                                        type="difference")
                failure.text = "\n".join([*lines, f"executionId: {case['executionId']}"])
    text: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return text


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.3f}"
