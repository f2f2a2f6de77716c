"""Job preparation, batch payload encoding and outcome decoding.

A batch payload is one JSON text ``{"e": [evicted ids], "c": [[id, source, names]],
"j": [[id, timeout_ms, inputs]]}``; the runner answers with one JSON array holding, per
job, ``[0, value]`` or ``[1, code, message]``.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ._types import SCRIPT_ERROR, ScriptJob, ScriptLimits, ScriptOutcome, timeout_outcome

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")

# Reserved words, strict-mode reserved words, and names that cannot be strict parameters.
_RESERVED_WORDS = """
await break case catch class const continue debugger default delete do else enum export
extends false finally for function if import in instanceof new null return super switch
this throw true try typeof var void while with yield implements interface let package
private protected public static arguments eval input
"""
RESERVED_NAMES = frozenset(_RESERVED_WORDS.split())

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

CompileKey = tuple[str, tuple[str, ...]]


def bare_names(inputs: Sequence[str]) -> tuple[str, ...]:
    """Input names that can be bound as plain local variables in the script."""
    return tuple(n for n in inputs if _IDENTIFIER.match(n) and n not in RESERVED_NAMES)


@dataclass(frozen=True, slots=True)
class PreparedJob:
    key: CompileKey
    timeout_ms: int
    inputs_json: str


def prepare(job: ScriptJob, limits: ScriptLimits) -> PreparedJob | ScriptOutcome:
    """Validate and pre-encode a job; an outcome means it fails without running."""
    timeout = limits.timeout_ms
    if job.timeout_ms is not None:
        timeout = min(timeout, job.timeout_ms)
    if timeout <= 0:
        return timeout_outcome(max(timeout, 0))
    try:
        inputs = dict(job.inputs)
        inputs_json = _encode(inputs).decode()
        _encode(job.source)
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        return ScriptOutcome.failure(
            SCRIPT_ERROR, f"script inputs are not JSON-serialisable: {exc}"
        )
    return PreparedJob((job.source, bare_names(list(inputs))), timeout, inputs_json)


class CompileCache:
    """Which (source, names) pairs the current V8 context holds compiled, by integer id."""

    def __init__(self, capacity: int = 1024) -> None:
        self._capacity = capacity
        self._ids: OrderedDict[CompileKey, int] = OrderedDict()
        self._next_id = 0
        self._evicted: list[int] = []

    def __len__(self) -> int:
        return len(self._ids)

    def payload(self, jobs: Sequence[PreparedJob]) -> str:
        """Encode a batch, compiling sources not yet known to the context."""
        compiles: list[list[Any]] = []
        parts: list[str] = []
        for job in jobs:
            ident = self._ids.get(job.key)
            if ident is None:
                ident = self._next_id
                self._next_id += 1
                self._ids[job.key] = ident
                compiles.append([ident, job.key[0], job.key[1]])
            else:
                self._ids.move_to_end(job.key)
            parts.append(f"[{ident},{job.timeout_ms},{job.inputs_json}]")
        while len(self._ids) > self._capacity:
            self._evicted.append(self._ids.popitem(last=False)[1])
        evicted, self._evicted = self._evicted, []
        head = _encode({"e": evicted, "c": compiles}).decode()
        return f'{head[:-1]},"j":[{",".join(parts)}]}}'


def decode_outcomes(text: str) -> list[ScriptOutcome]:
    return [_outcome(item) for item in _decode(text)]


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a terminated batch got: finished outcomes and the running job's time."""

    seq: int  # which batch the runner last started
    done: list[ScriptOutcome]
    current: int  # index of the running job, -1 before the first or after the last
    elapsed_ms: int


def decode_progress(text: str) -> Progress:
    raw = _decode(text)
    done = [_outcome(item) for item in raw["parts"]]
    return Progress(int(raw["seq"]), done, int(raw["cur"]), int(raw["elapsed"]))


def js_string(text: str) -> str:
    """A JavaScript string literal for ``text`` (JSON strings are valid JS literals)."""
    return _encode(text).decode()


def _outcome(item: list[Any]) -> ScriptOutcome:
    if item[0] == 0:
        return ScriptOutcome.success(item[1])
    return ScriptOutcome.failure(str(item[1]), str(item[2]))
