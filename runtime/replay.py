"""Replay: re-run the pure state machine over an execution's recorded block outcomes.

An execution's event stream (``{cf:N}:events:<execId>``, children's included)
records what each block did (its writes, its error) and what the machine then
decided (matched condition, next block, the end and its result). Replay feeds
the recorded outcomes back through :class:`runtime.machine.Machine`, with no
side effects, and compares every decision with the record. The first one that
differs is reported: a person sees where a conversation went, and a change to
the state machine is checked against recorded production traffic.

Block outcomes are facts here, never re-run. So are the ends that come from
outside the machine: a deadline, a cancellation, a crash (``aborted`` entries).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chatflow.schemas.definition import ToolDefinition
from chatflow.schemas.wire import ExecuteToolAction

from .errors import ToolFailure
from .machine import Machine
from .outcome import BlockOutcome
from .state import ExecState, Frame, LogEntry, RootInfo, Transition

_NEVER_MS = 2**62  # deadlines are not re-derived: a timeout is recorded as ``aborted``


@dataclass(frozen=True, slots=True)
class Divergence:
    execId: str
    index: int  # position in the trace
    expected: str  # what the machine decides now
    recorded: str  # what the record says

    def __str__(self) -> str:
        return (f"{self.execId} entry {self.index}: the machine now decides {self.expected}, "
                f"the record says {self.recorded}")


@dataclass(slots=True)
class ReplayReport:
    trace: list[LogEntry]
    executions: int = 0
    transitions: int = 0
    divergences: list[Divergence] = field(default_factory=list)

    @property
    def first(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None

    @property
    def ok(self) -> bool:
        return not self.divergences


def definition_hashes(entries: list[LogEntry]) -> dict[str, str]:
    """The definitions (by hash) a replay of ``entries`` needs, each with the publishedToolId
    it was published under."""
    return {str(e.detail["defHash"]): str(e.detail.get("publishedToolId", "")) for e in entries
            if e.type == "started" and e.detail and e.detail.get("defHash")}


def replay(entries: list[LogEntry], definitions: Mapping[str, ToolDefinition],
           machine: Machine | None = None) -> ReplayReport:
    """Replay a trace (as ``handlers.interfaces.client.trace`` returns it: depth-first, in order)."""
    machine = machine or Machine()
    report = ReplayReport(trace=entries)
    by_exec: dict[str, list[tuple[int, LogEntry]]] = {}
    for index, entry in enumerate(entries):
        by_exec.setdefault(entry.execId, []).append((index, entry))
    root_context: dict[str, Any] = {}
    for seq in by_exec.values():
        started = seq[0][1]
        if started.type == "started" and started.detail and "context" in started.detail:
            root_context = dict(started.detail["context"])
            break
    report.executions = len(by_exec)
    for exec_id, seq in by_exec.items():
        found = _replay_one(exec_id, seq, definitions, machine, root_context, report)
        if found is not None:
            report.divergences.append(found)
    report.divergences.sort(key=lambda d: d.index)
    return report


def _state(exec_id: str, started: LogEntry, context: dict[str, Any]) -> ExecState:
    detail = started.detail or {}
    pt = str(detail.get("publishedToolId", ""))
    root = RootInfo("replay", ExecuteToolAction(id="replay", toolId="", publishedToolId=pt),
                    None, {}, "", {}, context, started.at)
    depth = exec_id.count(".")
    frames = [Frame(exec_id.rsplit(".", 1)[0], "", "", 0)] if depth else []
    partition = int(exec_id.split("-", 1)[0]) if exec_id.split("-", 1)[0].isdecimal() else 0
    return ExecState(
        execId=exec_id, rootId=exec_id.split(".", 1)[0], partition=partition, depth=depth,
        toolId="", publishedToolId=pt, defHash=str(detail.get("defHash", "")),
        block=started.blockId or "", variables=dict(detail.get("variables") or {}),
        context=context, root=root, startedMs=started.at, deadlineMs=_NEVER_MS, frames=frames)


def _key(e: LogEntry) -> str:
    parts = [e.type]
    if e.blockId is not None and e.type == "block":
        parts.append(f"block={e.blockId}")
    if e.ok is not None:
        parts.append("ok" if e.ok else "failed")
    if e.error is not None:
        parts.append(f"error={e.error.code}")
    if e.matchedConditionId is not None:
        parts.append(f"matched={e.matchedConditionId}")
    if e.next is not None:
        parts.append(f"next={e.next}")
    if e.result is not None:
        parts.append(f"result={e.result!r}")
    return "[" + " ".join(parts) + "]"


def _replay_one(exec_id: str, seq: list[tuple[int, LogEntry]],
                definitions: Mapping[str, ToolDefinition], machine: Machine,
                context: dict[str, Any], report: ReplayReport) -> Divergence | None:
    first_index, started = seq[0]
    if started.type != "started" or not started.detail or "variables" not in started.detail:
        return Divergence(exec_id, first_index, "a 'started' entry with its variables",
                          _key(started))
    state = _state(exec_id, started, context)
    definition = definitions.get(state.defHash)
    if definition is None:
        return Divergence(exec_id, first_index, f"definition {state.defHash or '?'}",
                          "no such definition to replay with")
    rest = [(i, e) for i, e in seq[1:] if e.type != "spawned"]
    pos = 0
    while pos < len(rest):
        index, recorded = rest[pos]
        if recorded.type == "aborted":  # ended from outside the machine: a fact, not a decision
            return None if pos == len(rest) - 1 else Divergence(
                exec_id, rest[pos + 1][0], "[nothing after the abort]", _key(rest[pos + 1][1]))
        produced = _step(machine, state, definition, recorded)
        if isinstance(produced, str):
            return Divergence(exec_id, index, produced, _key(recorded))
        mine = [e for e in produced.log if e.execId == exec_id]
        state = next((w for w in reversed(produced.writes) if w.execId == exec_id), state)
        report.transitions += 1
        for offset, expected in enumerate(mine):
            if pos + offset >= len(rest):
                return Divergence(exec_id, rest[-1][0] if rest else first_index, _key(expected),
                                  "[end of the record]")
            got_index, got = rest[pos + offset]
            if got.type == "aborted":
                return None
            if _key(expected) != _key(got):
                return Divergence(exec_id, got_index, _key(expected), _key(got))
        pos += len(mine)
        if any(e.type in ("finished", "aborted") for e in mine):
            if pos < len(rest):
                return Divergence(exec_id, rest[pos][0], "[nothing after the end]",
                                  _key(rest[pos][1]))
            return None
    return None


def _step(machine: Machine, state: ExecState, definition: ToolDefinition,
          recorded: LogEntry) -> Transition | str:
    """The machine's transition at this point, fed the recorded block outcome (or what it
    expected to run instead, when the record ran another block)."""
    now = recorded.at
    planned = machine.plan(state, definition, now)
    if isinstance(planned, Transition):
        return planned
    if recorded.type != "block" or recorded.blockId != planned.id:
        return f"[block block={planned.id}]"
    error = recorded.error
    outcome = BlockOutcome(
        writes=dict(recorded.writes or {}),
        error=ToolFailure.recorded(error.code, error.message) if error else None,
        debug=dict(recorded.detail or {}), duration_ms=recorded.durationMs or 0)
    return machine.after_block(state, planned, outcome, now)
