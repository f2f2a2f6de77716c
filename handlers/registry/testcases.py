"""Saved test cases: kept per tool in the registry log, run in this process with their mocks.

A case is a ``test.created`` / ``test.updated`` / ``test.deleted`` event like any other
registry change: every API process folds it, and the audit trail says who made it. The
count of cases is capped per tool, per workspace and per API key, and one case's size too
(``CHATFLOW_TESTS_MAX_*``).

:class:`CaseRunner` runs a tool's cases against its draft or one of its published versions,
each in the caller's workspace, through the inline runner with the case's mocks, and judges
every run (``runtime.registry.cases.judge``). Each run is kept in the run history when one is
configured, so a failing case links to the run it produced.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import structlog

from chatflow.runtime.registry import RegistryState, workspace_of
from chatflow.runtime.registry.cases import judge, mock_problem
from chatflow.runtime.registry.state import Record
from chatflow.runtime.validation import parse_definition
from chatflow.schemas.definition import PublishedTool, ToolDefinition

from ..redaction import SecretIndex
from ..settings import Settings
from .case_models import CaseIn
from .errors import ApiCode, Conflict, Invalid, NotFound
from .inline import InlineRun, InlineRunner
from .log import Append
from .registry import Registry
from .scope import SHELL, Grant, Scope
from .tools import case_field, get_tool, new_id

log = structlog.get_logger("chatflow.registry")
PARALLEL = 4  # cases of one run at once


@dataclass(frozen=True, slots=True)
class CaseLimits:
    per_tool: int = 100
    per_workspace: int = 2000
    per_key: int = 1000
    case_bytes: int = 256 * 1024

    @classmethod
    def of(cls, settings: Settings) -> CaseLimits:
        return cls(settings.tests_max_per_tool, settings.tests_max_per_workspace,
                   settings.tests_max_per_key, settings.tests_max_case_bytes)


def _case(state: RegistryState, tool_id: str, case_id: str) -> Record:
    case = state.cases.get(tool_id, {}).get(case_id)
    if case is None:
        raise NotFound(f"tool {tool_id!r} has no test case {case_id!r}")
    return case


def _ordered(cases: dict[str, Record]) -> list[Record]:
    return sorted(cases.values(), key=lambda c: (c.get("createdAt") or "", c["id"]))


class CaseOps:
    """Create, read, replace and delete a tool's saved test cases."""

    def __init__(self, registry: Registry, limits: CaseLimits | None = None) -> None:
        self.registry = registry
        self.limits = limits or CaseLimits()

    async def list(self, tool_id: str, *, scope: Scope = SHELL) -> list[Record]:
        await self.registry.catch_up()
        state = self.registry.state
        get_tool(state, tool_id, trashed_ok=True, workspace=scope.workspace)
        return _ordered(state.cases.get(tool_id, {}))

    async def get(self, tool_id: str, case_id: str, *, scope: Scope = SHELL) -> Record:
        await self.registry.catch_up()
        get_tool(self.registry.state, tool_id, trashed_ok=True, workspace=scope.workspace)
        return _case(self.registry.state, tool_id, case_id)

    def _sized(self, record: Record) -> None:
        size = len(json.dumps(record, ensure_ascii=False).encode())
        if size > self.limits.case_bytes:
            raise Invalid(f"the test case is {size} bytes; at most {self.limits.case_bytes} "
                          "(CHATFLOW_TESTS_MAX_CASE_BYTES)", code=ApiCode.TEST_CASE_TOO_LARGE)

    def _room(self, state: RegistryState, tool_id: str, scope: Scope) -> None:
        """Refuse a case past the caps (checked against the caught-up state)."""
        mine = len(state.cases.get(tool_id, {}))
        if mine >= self.limits.per_tool:
            raise Conflict(f"tool {tool_id!r} holds {mine} test cases, the most a tool may "
                           "(CHATFLOW_TESTS_MAX_PER_TOOL)", code=ApiCode.TOO_MANY_TEST_CASES)
        in_workspace = by_key = 0
        for tid, cases in state.cases.items():
            tool = state.tools.get(tid)
            if tool is not None and workspace_of(tool) == scope.workspace:
                in_workspace += len(cases)
            by_key += sum(1 for c in cases.values() if c.get("createdBy") == scope.actor)
        if in_workspace >= self.limits.per_workspace:
            raise Conflict(f"workspace {scope.workspace!r} holds {in_workspace} test cases, the "
                           "most it may (CHATFLOW_TESTS_MAX_PER_WORKSPACE)",
                           code=ApiCode.TOO_MANY_TEST_CASES)
        if by_key >= self.limits.per_key:
            raise Conflict(f"this key made {by_key} test cases, the most one key may "
                           "(CHATFLOW_TESTS_MAX_PER_KEY)", code=ApiCode.TOO_MANY_TEST_CASES)

    async def create(self, tool_id: str, body: CaseIn, *, scope: Scope = SHELL) -> Record:
        case_id = body.id or new_id("case")
        record = body.record(case_id)
        self._sized(record)

        def build(state: RegistryState) -> Append:
            tool = get_tool(state, tool_id, workspace=scope.workspace)
            if case_id in state.cases.get(tool_id, {}):
                raise Conflict(f"tool {tool_id!r} already has a test case {case_id!r}",
                               code=ApiCode.TEST_CASE_EXISTS)
            self._room(state, tool_id, scope)
            return _case_event(state, tool, "test.created", case_id,
                               {"case": record}, "0")

        await self.registry.commit(build, scope)
        return _case(self.registry.state, tool_id, case_id)

    async def replace(self, tool_id: str, case_id: str, body: CaseIn, *,
                      scope: Scope = SHELL) -> Record:
        record = body.record(case_id)
        self._sized(record)

        def build(state: RegistryState) -> Append:
            tool = get_tool(state, tool_id, workspace=scope.workspace)
            case = _case(state, tool_id, case_id)
            if body.version is not None and body.version != case["version"]:
                raise Conflict(f"test case {case_id!r} was changed meanwhile: it is at version "
                               f"{case['version']}, you sent {body.version}",
                               code=ApiCode.VERSION_CONFLICT, version=case["version"])
            return _case_event(state, tool, "test.updated", case_id, {"case": record},
                               str(case["version"]))

        await self.registry.commit(build, scope)
        return _case(self.registry.state, tool_id, case_id)

    async def delete(self, tool_id: str, case_id: str, *, scope: Scope = SHELL) -> Record:
        def build(state: RegistryState) -> Append:
            tool = get_tool(state, tool_id, trashed_ok=True, workspace=scope.workspace)
            case = _case(state, tool_id, case_id)
            item = _case_event(state, tool, "test.deleted", case_id, {}, str(case["version"]))
            item.sets[case_field(tool_id, case_id)] = ""
            return item

        await self.registry.commit(build, scope)
        return {"id": case_id, "toolId": tool_id, "deleted": True}


def _case_event(state: RegistryState, tool: Record, kind: str, case_id: str,
                fields: dict[str, Any], case_version: str) -> Append:
    """A case event, checked against the tool (no purge races it) and the case's version,
    and counted in ``tests:{toolId}`` (what a gated publish checks)."""
    tool_id = tool["id"]
    count = state.cases_version.get(tool_id, 0)
    field = case_field(tool_id, case_id)
    expect = {f"tool:{tool_id}": str(tool["version"]), f"tests:{tool_id}": str(count),
              field: case_version}
    sets = {f"tests:{tool_id}": str(count + 1), field: str(int(case_version) + 1)}
    return Append({"type": kind, "toolId": tool_id, "id": case_id, **fields}, expect, sets)


# -- running -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Target:
    """What a run of cases runs: a tool's draft or one of its versions, parsed."""

    tool_id: str
    name: str
    against: str | int  # "draft" or a version number
    definition: ToolDefinition
    raw: Any  # the definition as stored


class CaseRunner:
    """Runs saved test cases in this process (the API's, or the CLI's)."""

    def __init__(self, registry: Registry, inline: InlineRunner, history: Any = None,
                 secrets: SecretIndex | None = None) -> None:
        self.registry = registry
        self.inline = inline
        self.history = history  # the run history's engine, or None
        self.secrets = secrets  # the workspaces' stored secret values, masked in the history

    def target(self, state: RegistryState, tool_id: str, version: int | None,
               workspace: str) -> Target:
        tool = get_tool(state, tool_id, workspace=workspace)
        against: str | int = "draft"
        if version is None:
            raw = tool.get("definition")
        else:
            found = state.version_of(tool_id, version)
            if found is None:
                raise NotFound(f"tool {tool_id!r} has no version {version}",
                               code=ApiCode.VERSION_NOT_FOUND)
            raw, against = found["definition"], version
        parsed, problems = parse_definition(raw)
        if parsed is None or problems:
            raise Invalid(f"the {'draft' if version is None else f'version {version}'} of "
                          f"tool {tool_id!r} cannot run", code=ApiCode.INVALID_DEFINITION,
                          problems=[f"definition.{p}" for p in problems])
        return Target(tool_id, str(tool.get("name", "")), against, parsed, raw)

    async def run(self, tool_id: str, *, grant: Grant, version: int | None = None,
                  case_ids: list[str] | None = None) -> dict[str, Any]:
        """Every case (or ``case_ids``) against the draft or ``version``, each run in the
        grant's workspace: a report with each case's verdict and differences."""
        await self.registry.catch_up()
        state = self.registry.state
        target = self.target(state, tool_id, version, grant.workspace)
        cases = _ordered(state.cases.get(tool_id, {}))
        if case_ids is not None:
            known = {c["id"] for c in cases}
            missing = [c for c in case_ids if c not in known]
            if missing:
                raise NotFound(f"tool {tool_id!r} has no test case {missing[0]!r}")
            cases = [c for c in cases if c["id"] in set(case_ids)]
        return await self.run_cases(target, cases, grant)

    async def run_cases(self, target: Target, cases: list[Record],
                        grant: Grant) -> dict[str, Any]:
        gate = asyncio.Semaphore(PARALLEL)

        async def one(case: Record) -> dict[str, Any]:
            async with gate:
                return await self._one(target, case, grant)

        results = list(await asyncio.gather(*(one(c) for c in cases)))
        failed = sum(1 for r in results if not r["passed"])
        return {"toolId": target.tool_id, "against": target.against,
                "passed": len(results) - failed, "failed": failed, "cases": results}

    async def _one(self, target: Target, case: Record, grant: Grant) -> dict[str, Any]:
        mocks: dict[str, Any] = case.get("mocks") or {}
        static = [{"field": f"mocks.{key}", "expected": why, "actual": mocks[key]}
                  for key, why in _mock_problems(target.definition, mocks)]
        published = PublishedTool(id=f"test-{target.tool_id}", toolId=target.tool_id,
                                  name=target.name, definition=target.definition)
        run = await self.inline.run(published, grant=grant, inputs=case.get("inputs") or {},
                                    variables=case.get("variables") or {},
                                    contact=case.get("contactId") or "test", mocks=mocks)
        body = run.body()
        path = [e.blockId for e in run.trace
                if e.type == "block" and e.execId == run.execution_id and e.blockId]
        differences = static + judge(case.get("expect") or {}, ok=body["ok"],
                                     result=body["result"], error=body["error"], path=path)
        return {"id": case["id"], "name": case.get("name", ""), "passed": not differences,
                "differences": differences, "result": body["result"], "error": body["error"],
                "path": path, "executionId": run.execution_id, "durationMs": body["durationMs"],
                "unusedMocks": sorted(set(mocks) - run.mocks_used),
                "needs": case.get("needs") or [], "trace": body["trace"],
                "inHistory": await self._keep(run, grant.workspace)}

    async def _keep(self, run: InlineRun, workspace: str) -> bool:
        """The run in the run history (its page shows it); a history that cannot write
        costs the link, never the verdict."""
        if self.history is None:
            return False
        from sqlalchemy.exc import SQLAlchemyError

        from ..history.builder_runs import record_test_run

        try:
            secrets = await self.secrets.of(workspace) if self.secrets is not None else ()
            return await record_test_run(self.history, run.executions, run.trace,
                                         run.definition, secrets)
        except (SQLAlchemyError, OSError) as exc:
            log.warning("a test case's run was not kept in the run history",
                        error=exc.__class__.__name__)
            return False


def _mock_problems(definition: ToolDefinition, mocks: dict[str, Any]) -> list[tuple[str, str]]:
    """Mocks of the tool's own blocks that do not fit them (nested ones are checked as they
    run: their tool is read then)."""
    out = []
    for key, mock in mocks.items():
        block = definition.blocks.get(key)
        problem = mock_problem(block.type, mock) if block is not None else None
        if problem is not None:
            out.append((key, problem))
    return out
