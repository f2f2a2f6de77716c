"""The publish gate: a tool's saved test cases run against its draft before it is published,
and against version n's definition before a rollback publishes it again.

Any failing case refuses the publish with 409 ``tests_failed``, listing each failure (its
differences and the run it produced). An editor may force it (``force: true``); the failing
case ids are then kept in the version (``forced``) beside its note. The publish is appended
only while the cases that ran are still the tool's cases and the draft is the one they ran
against: the event expects both versions (``tests:{toolId}``, ``tool:{toolId}``), so a case
saved or a draft changed meanwhile makes it a conflict, never a silent pass. A rollback's
definition is a version, which never changes: only the cases are held.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chatflow.runtime.registry import RegistryState
from chatflow.runtime.registry.validation import check_publish

from .errors import ApiCode, Conflict, Invalid
from .log import Append
from .scope import SHELL, Grant, Scope
from .testcases import CaseRunner
from .tools import ToolOps, get_tool
from .versions import VersionOps, republishable


@dataclass(frozen=True, slots=True)
class CasesHeld:
    """What the cases said, held until the publish is appended (``ToolOps.publish``)."""

    tool_id: str
    cases_version: int
    forced: dict[str, Any] | None = None

    def hold(self, state: RegistryState, item: Append) -> None:
        now = state.cases_version.get(self.tool_id, 0)
        if now != self.cases_version:
            raise Conflict(f"the test cases of tool {self.tool_id!r} changed while they ran; "
                           "publish again", code=ApiCode.TESTS_CHANGED)
        item.expect[f"tests:{self.tool_id}"] = str(now)
        if self.forced is not None:
            item.event["forced"] = self.forced


def failures(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: c[k] for k in ("id", "name", "differences", "executionId", "error", "result")}
            for c in report["cases"] if not c["passed"]]


async def _judge(cases: CaseRunner, tool_id: str, held: CasesHeld, *, scope: Scope,
                 force: bool, refused: str, advice: str, version: int | None = None
                 ) -> tuple[dict[str, Any], CasesHeld]:
    """Run the tool's cases on its draft (or ``version``). A failure refuses, unless
    ``force``: 409 ``tests_failed``, ``refused`` saying what was not done and ``advice``
    what to do. A forced failure is kept in what ``held`` appends."""
    report = await cases.run(tool_id, grant=Grant(scope.workspace, scope.actor, scope.name),
                             version=version)
    summary: dict[str, Any] = {"passed": report["passed"], "failed": report["failed"],
                               "forced": False}
    failed = failures(report)
    if failed and not force:
        raise Conflict(f"{refused}: {len(failed)} of {len(report['cases'])} saved test "
                       f"case(s) fail ({advice})",
                       code=ApiCode.TESTS_FAILED, failures=failed, passed=report["passed"],
                       failed=report["failed"])
    if failed:
        summary["forced"] = True
        held = CasesHeld(tool_id, held.cases_version, {"failed": [f["id"] for f in failed]})
    return summary, held


def _untested() -> dict[str, Any]:
    return {"passed": 0, "failed": 0, "forced": False}


async def publish_gated(tools: ToolOps, cases: CaseRunner, tool_id: str, *,
                        version: int | None = None, note: str | None = None,
                        force: bool = False, scope: Scope = SHELL,
                        published_id: str | None = None) -> dict[str, Any]:
    """Run the tool's cases on its draft, then publish it unless one fails (or ``force``).
    The answer is the tool as published plus ``tests`` (passed, failed, forced).
    ``published_id``: trusted callers only (``chatflow import``), as ``ToolOps.publish``."""
    await tools.registry.catch_up()
    state = tools.registry.state
    tool = get_tool(state, tool_id, trashed_ok=True, workspace=scope.workspace)
    draft = int(tool["version"])
    held = CasesHeld(tool_id, state.cases_version.get(tool_id, 0))
    summary = _untested()
    if state.cases.get(tool_id) and not tool.get("deletedAt"):
        problems = check_publish(state, tool_id)  # a draft that cannot publish says so first
        if problems:
            raise Invalid(f"tool {tool_id!r} cannot be published: {len(problems)} problem(s)",
                          problems=problems, code=ApiCode.INVALID_DEFINITION)
        summary, held = await _judge(cases, tool_id, held, scope=scope, force=force,
                                     refused=f"tool {tool_id!r} was not published",
                                     advice="fix the draft, or publish with force and a note")
        version = draft if version is None else version  # the draft the cases judged
    published = await tools.publish(tool_id, version, scope=scope, note=note, gate=held,
                                    published_id=published_id)
    return {**published, "tests": summary}


async def rollback_gated(versions: VersionOps, cases: CaseRunner, tool_id: str, number: int,
                         *, note: str | None = None, force: bool = False,
                         scope: Scope = SHELL) -> dict[str, Any]:
    """A rollback is a publish: run the tool's cases on version ``number``'s definition,
    then publish it again as the next version unless one fails (or ``force``). The answer
    is ``VersionOps.rollback``'s plus ``tests``."""
    await versions.registry.catch_up()
    state = versions.registry.state
    held = CasesHeld(tool_id, state.cases_version.get(tool_id, 0))
    summary = _untested()
    if state.cases.get(tool_id):
        republishable(state, tool_id, number, scope)  # in the trash, or cannot publish: first
        summary, held = await _judge(
            cases, tool_id, held, scope=scope, force=force, version=number,
            refused=f"tool {tool_id!r} was not rolled back to version {number}",
            advice="roll back to another version, or with force and a note")
    done = await versions.rollback(tool_id, number, note=note, scope=scope, gate=held)
    return {**done, "tests": summary}
