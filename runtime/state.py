"""Execution state and the messages the state machine produces.

All of it is msgspec: it is encoded and decoded on every step.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from chatflow.schemas.wire import ErrorInfo, ExecuteToolAction

Status = Literal["running", "waiting", "done"]


class Frame(msgspec.Struct, frozen=True):
    """An ancestor in the callTool chain, root first."""

    execId: str
    toolId: str
    publishedToolId: str
    startedMs: int


class RootInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the root needs to answer its command; copied into every execution of the tree.

    ``workspace`` is fixed when the tree starts (the root tool's, or the caller's key's for a
    test run or a fork) and every lookup a block makes resolves inside it
    (docs/security.md). Left out of the encoded state when it is ``default``, so a tree of
    the default workspace writes no byte more than before workspaces travelled with it.

    ``traceparent``/``tracestate``: the command's W3C Trace Context, as the intake accepted
    it (only while tracing is on, and only a valid one): every span of the tree joins that
    trace, and outgoing requests continue it (docs/operations.md "Tracing"). Left out when
    empty, like ``workspace``.
    """

    commandId: str
    action: ExecuteToolAction
    replyTo: str | None
    inputs: dict[str, Any]
    contactId: str
    sessionVariables: dict[str, Any]
    context: dict[str, Any]
    startedMs: int
    workspace: str = "default"
    traceparent: str = ""
    tracestate: str = ""


class ExecState(msgspec.Struct):
    # The machine builds states positionally (machine.py ``start``, ``spawn``): a new field
    # goes last, and the order of these is not changed (tests/machine/test_state_order.py).
    execId: str
    rootId: str
    partition: int
    depth: int
    toolId: str
    publishedToolId: str
    defHash: str
    block: str
    variables: dict[str, Any]
    context: dict[str, Any]
    root: RootInfo
    startedMs: int
    deadlineMs: int
    debug: bool = False
    frames: list[Frame] = []
    hops: int = 0
    invocations: int = 0
    status: Status = "running"
    version: int = 1
    waitingOn: str | None = None

    @property
    def chain(self) -> list[str]:
        return [f.publishedToolId for f in self.frames] + [self.publishedToolId]


class ChildOutcome(msgspec.Struct, frozen=True):
    execId: str
    ok: bool
    result: str = ""
    error: ErrorInfo | None = None
    invocations: int = 0
    durationMs: int = 0  # the child's run, from its start to its end: the callTool block's time


class Attempt(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """One attempt of a block with a retry policy (runtime/retry.py): the status the
    upstream answered, else the error code; how long it took, and how long the block waited
    before it (0 for the first)."""

    status: int | None = None
    error: str | None = None
    durationMs: int
    waitMs: int


StepKind = Literal["run", "resume"]


class StepMsg(msgspec.Struct, frozen=True, omit_defaults=True):
    """An entry on a partition's step stream: advance execution ``exec_id`` at ``version``.

    On the wire the fields keep their one-letter names (``e``, ``v``, ``k``, ``s``): a step
    entry is written for every block, so its size counts."""

    exec_id: str = msgspec.field(name="e")
    version: int = msgspec.field(name="v")
    kind: StepKind = msgspec.field(default="run", name="k")
    child: ChildOutcome | None = None
    # The state at ``version``, inlined when small, so the next worker need not read it.
    state: ExecState | None = msgspec.field(default=None, name="s")
    # A retry's step (runtime/retry.py): the attempts made so far, and when the last one
    # ended (ms), so the next attempt knows its number and the wait it had.
    attempts: list[Attempt] | None = msgspec.field(default=None, name="a")
    since: int = msgspec.field(default=0, name="t")


class StepOut(msgspec.Struct, frozen=True, omit_defaults=True):
    """StepMsg as written: the inlined state is the blob already encoded for the state key."""

    exec_id: str = msgspec.field(name="e")
    version: int = msgspec.field(name="v")
    kind: StepKind = msgspec.field(default="run", name="k")
    child: ChildOutcome | None = None
    state: msgspec.Raw | None = msgspec.field(default=None, name="s")
    attempts: list[Attempt] | None = msgspec.field(default=None, name="a")
    since: int = msgspec.field(default=0, name="t")


EmitKind = Literal["result", "execution", "debug", "llm_usage"]


class Emit(msgspec.Struct, frozen=True):
    """A message for a public stream; ``key`` is the reply stream or the contact id.

    ``facts``: what the metrics count of it, kept beside the encoded ``data`` so the worker
    does not decode its own message again (an execution event's ``(publishedToolId, success,
    errorCode, durationMs)``, a result's ``ok``). Never written to a stream."""

    kind: EmitKind
    key: str
    data: bytes
    facts: Any = None


class LogEntry(msgspec.Struct, frozen=True, omit_defaults=True):
    """An entry of an execution's own event stream: the event-sourced trace."""

    type: str
    execId: str
    at: int
    blockId: str | None = None
    blockType: str | None = None
    durationMs: int | None = None
    ok: bool | None = None
    error: ErrorInfo | None = None
    matchedConditionId: str | None = None
    next: str | None = None
    child: str | None = None
    result: str | None = None
    detail: dict[str, Any] | None = None
    # Replay (runtime/replay.py): the variables a block wrote; ``next`` above is the block
    # navigation chose (``@<type>`` for a target that ends the tool).
    writes: dict[str, Any] | None = None


class Transition(msgspec.Struct):
    """What one step decided: states to write, steps to enqueue, messages to emit.

    ``finishes_root`` makes the commit claim the tree's single outcome: if another
    path (the reaper, a cancel) already answered, the whole transition is dropped.
    """

    expect: tuple[str, int] | None = None
    # More (execution, version) checks, from transitions fused into this one (a parent
    # resumed inside its child's last step); all must hold or nothing is written.
    also_expect: list[tuple[str, int]] = []
    writes: list[ExecState] = []
    steps: list[StepMsg] = []
    emits: list[Emit] = []
    log: list[LogEntry] = []
    definitions: dict[str, bytes] = {}
    finishes_root: bool = False
    done: list[str] = []
    # Steps that wait in Valkey until their time (ms), not on a stream: a retry's next
    # attempt (runtime/retry.py). Committed with the transition, promoted when due.
    delayed: list[tuple[int, StepMsg]] = []


class _Packed(msgspec.Struct, frozen=True, omit_defaults=True):
    """A ``LogEntry`` as a line of this version writes it: one-letter names, the execution
    id relative to the line's root and the time relative to the line's first entry, so a
    line carries each of them once (a one-hop tree's log was 1.4 KB, half of it names and
    repeated ids). Defaults are left out; ``None`` stays distinct from ``0``."""

    type: str = msgspec.field(name="t")
    exec: str = msgspec.field(default="", name="e")  # "": the root; ".N...": root + this
    at: int = msgspec.field(default=0, name="a")  # ms after the line's first entry
    blockId: str | None = msgspec.field(default=None, name="b")
    blockType: str | None = msgspec.field(default=None, name="y")
    durationMs: int | None = msgspec.field(default=None, name="m")
    ok: bool | None = msgspec.field(default=None, name="o")
    error: ErrorInfo | None = msgspec.field(default=None, name="x")
    matchedConditionId: str | None = msgspec.field(default=None, name="k")
    next: str | None = msgspec.field(default=None, name="n")
    child: str | None = msgspec.field(default=None, name="c")  # relative, as ``exec``
    result: str | None = msgspec.field(default=None, name="r")
    detail: dict[str, Any] | None = msgspec.field(default=None, name="d")
    writes: dict[str, Any] | None = msgspec.field(default=None, name="w")


class _Line(msgspec.Struct, array_like=True):
    """One transition's line: ``["<rootId>", <first entry's ms>, [entries...]]``. It starts
    with ``["``, which no line of an earlier version does (``[{``, and ``{`` for a stream
    entry of the version before), so ``decode_log`` tells them apart by their first bytes."""

    root: str
    at: int
    entries: list[_Packed]


# The entry types this runtime writes, as one letter on the wire; any other name (none
# today) is written whole, and a whole name is never one letter long.
_TYPE_CODE = {"started": "s", "block": "b", "spawned": "p", "finished": "f", "aborted": "a"}
_TYPE_NAME = {code: name for name, code in _TYPE_CODE.items()}

state_encoder = msgspec.json.Encoder()
state_decoder = msgspec.json.Decoder(ExecState)
step_decoder = msgspec.json.Decoder(StepMsg)
_log_entry = msgspec.json.Decoder(LogEntry)
_log_line = msgspec.json.Decoder(list[LogEntry])
_packed_line = msgspec.json.Decoder(_Line)


def _absolute(rel: str, root: str) -> str:
    # A whole execution id never starts with "." (ids are "N-<uuid>[.v...]").
    return root if not rel else root + rel if rel[0] == "." else rel


# A ``started`` entry's detail repeats what its line already says: a child's ``parent`` is its
# own id less its last ``.N``, and the variables an execution starts with are most often its
# inputs. Such a value is written as ``0``, which neither ever is (a parent is a string, the
# variables a mapping), and restored on decoding; the keys keep their order.
_DERIVED = 0


def _pack_detail(exec_id: str, detail: dict[str, Any]) -> dict[str, Any]:
    parent = detail.get("parent")
    same_parent = isinstance(parent, str) and "." in exec_id and parent == exec_id.rsplit(".", 1)[0]
    variables = detail.get("variables")
    same_vars = isinstance(variables, dict) and variables == detail.get("inputs")
    if not same_parent and not same_vars:
        return detail
    out = dict(detail)
    if same_parent:
        out["parent"] = _DERIVED
    if same_vars:
        out["variables"] = _DERIVED
    return out


def _is_derived(value: Any) -> bool:
    return type(value) is int and value == _DERIVED


def _unpack_detail(exec_id: str, detail: dict[str, Any]) -> dict[str, Any]:
    if _is_derived(detail.get("parent")):
        detail["parent"] = exec_id.rsplit(".", 1)[0]
    if _is_derived(detail.get("variables")):
        inputs = detail.get("inputs")
        detail["variables"] = dict(inputs) if isinstance(inputs, dict) else inputs
    return detail


def encode_log(entries: list[LogEntry]) -> bytes:
    """One transition's log entries as one line of an event log (``decode_log`` reads it)."""
    if not entries:
        return b"[]\n"
    first = entries[0]
    root = first.execId.split(".", 1)[0]
    base = first.at
    # An id relative to the root: "" for the root, ".N..." below it, any other kept whole
    # (never in one tree's log). Inline, not a helper: it runs for every entry of a commit.
    below, cut = root + ".", len(root)
    packed = []
    for e in entries:
        exec_id, child, detail = e.execId, e.child, e.detail
        if child is not None:
            child = "" if child == root else child[cut:] if child.startswith(below) else child
        if detail and e.type == "started":
            detail = _pack_detail(exec_id, detail)
        packed.append(_Packed(
            _TYPE_CODE.get(e.type, e.type),
            "" if exec_id == root else exec_id[cut:] if exec_id.startswith(below) else exec_id,
            e.at - base, e.blockId, e.blockType, e.durationMs, e.ok, e.error,
            e.matchedConditionId, e.next, child, e.result, detail, e.writes))
    return state_encoder.encode(_Line(root, base, packed)) + b"\n"


def _unpack(line: _Line) -> list[LogEntry]:
    root, base = line.root, line.at
    out = []
    for p in line.entries:
        kind, exec_id = _TYPE_NAME.get(p.type, p.type), _absolute(p.exec, root)
        detail = (_unpack_detail(exec_id, p.detail) if kind == "started" and p.detail
                  else p.detail)
        out.append(LogEntry(kind, exec_id, base + p.at, p.blockId, p.blockType, p.durationMs,
                            p.ok, p.error, p.matchedConditionId, p.next,
                            None if p.child is None else _absolute(p.child, root), p.result,
                            detail, p.writes))
    return out


def _decode_line(line: bytes) -> list[LogEntry]:
    if line[:2] == b'["':
        return _unpack(_packed_line.decode(line))
    return _log_line.decode(line)  # the previous version's line: a JSON array of LogEntry


def decode_log(raw: bytes) -> list[LogEntry]:
    """The log entries in ``raw``, in order, whichever version wrote it: the one decoder of
    event-log records (replay, traces, projections).

    * this version: a tree's log is one string of lines, one line per transition, each line
      ``["<rootId>", <ms>, [entries...]]`` with compact entries (``encode_log``, ``_Line``);
    * the previous version: the same string of lines, each a JSON array of ``LogEntry``
      objects; a tree a worker of that version started mixes both kinds of line;
    * the version before: one stream entry per log entry, its ``d`` field one JSON object.

    Raises ``msgspec.DecodeError`` for anything else."""
    raw = raw.strip()
    if not raw:
        return []
    if raw[:1] == b"{":
        return [_log_entry.decode(raw)]
    return [entry for line in raw.split(b"\n") if line for entry in _decode_line(line)]


# -- a log's outline: what the spans of a tree read (handlers/projections/spans.py) ----------


class OutlineDetail(msgspec.Struct, frozen=True):
    """The keys of an entry's ``detail`` that describe a block visit or a tree (a request's
    method, URL and status, its attempts, a model call's model and usage, the command's trace
    context and contact); every other key (inputs, variables, a definition's hash) is skipped
    by the decoder without being built."""

    url: Any = None
    method: Any = None
    status: Any = None
    attempts: Any = None
    model: Any = None
    usage: Any = None
    traceparent: Any = None
    tracestate: Any = None
    context: Any = None


class LogOutline(msgspec.Struct):
    """A log entry without what it wrote or returned: its kind, execution, time, block, error,
    child and ``OutlineDetail``. Decoded from a line of this version with the one-letter names
    of ``_Packed``; ``execId`` and ``at`` are made absolute after decoding."""

    type: str = msgspec.field(name="t")
    execId: str = msgspec.field(default="", name="e")
    at: int = msgspec.field(default=0, name="a")
    blockId: str | None = msgspec.field(default=None, name="b")
    blockType: str | None = msgspec.field(default=None, name="y")
    durationMs: int | None = msgspec.field(default=None, name="m")
    error: ErrorInfo | None = msgspec.field(default=None, name="x")
    child: str | None = msgspec.field(default=None, name="c")
    detail: OutlineDetail | None = msgspec.field(default=None, name="d")


class _OutlineLine(msgspec.Struct, array_like=True):
    root: str
    at: int
    entries: list[LogOutline]


_outline_line = msgspec.json.Decoder(_OutlineLine)


def outline_of(entry: LogEntry) -> LogOutline:
    """A decoded ``LogEntry`` as its outline (a line of an earlier version, a test's entry)."""
    detail = msgspec.convert(entry.detail, OutlineDetail) if entry.detail else None
    return LogOutline(entry.type, entry.execId, entry.at, entry.blockId, entry.blockType,
                      entry.durationMs, entry.error, entry.child, detail)


def outline_log(raw: bytes) -> list[LogOutline]:
    """``decode_log``'s entries in outline: the same entries, in order, but a written value,
    a result or an input is parsed over, not built (a tree's log holds every response body it
    read). Lines of earlier versions go through ``decode_log``. Raises
    ``msgspec.DecodeError`` for what ``decode_log`` would."""
    raw = raw.strip()
    if not raw or raw[:1] == b"{":
        return [outline_of(e) for e in decode_log(raw)]
    out: list[LogOutline] = []
    for line in raw.split(b"\n"):
        if line[:2] != b'["':
            if line:
                out += [outline_of(e) for e in _decode_line(line)]
            continue
        decoded = _outline_line.decode(line)
        root, base = decoded.root, decoded.at
        for e in decoded.entries:
            e.type = _TYPE_NAME.get(e.type, e.type)
            e.execId = _absolute(e.execId, root)
            e.at += base
            if e.child is not None:
                e.child = _absolute(e.child, root)
        out += decoded.entries
    return out
