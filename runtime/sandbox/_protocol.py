"""Frames exchanged between a ScriptSandbox and its worker process.

Each frame is a 4-byte big-endian length followed by msgspec JSON. A request is a list of
``[source, bare_names, timeout_ms, inputs]`` (inputs as raw JSON); a response is
``[contexts_created, [[ok, value, error, code], ...], retire]``; ``[false, null, null,
null]`` stands for a job that was not run (handed back to the scheduler's queue), and
``retire`` asks the parent to replace the worker (it holds a V8 context it cannot free).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import msgspec

from ._codec import PreparedJob
from ._types import ScriptOutcome

HEADER = struct.Struct(">I")

_RequestItem = tuple[str, list[str], int, msgspec.Raw]
_OutcomeItem = tuple[bool, Any, str | None, str | None]

_encoder = msgspec.json.Encoder()
_request_decoder = msgspec.json.Decoder(list[_RequestItem])
_response_decoder = msgspec.json.Decoder(tuple[int, list[_OutcomeItem], bool])


def frame(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


def encode_request(jobs: Sequence[PreparedJob]) -> bytes:
    items = [
        (job.key[0], job.key[1], job.timeout_ms, msgspec.Raw(job.inputs_json.encode()))
        for job in jobs
    ]
    return frame(_encoder.encode(items))


def decode_request(body: bytes) -> list[PreparedJob]:
    return [
        PreparedJob((source, tuple(names)), timeout, bytes(raw).decode())
        for source, names, timeout, raw in _request_decoder.decode(body)
    ]


_NOT_RUN: _OutcomeItem = (False, None, None, None)


def encode_response(
    contexts_created: int, outcomes: Sequence[ScriptOutcome | None], retire: bool = False
) -> bytes:
    items = [_NOT_RUN if o is None else (o.ok, o.value, o.error, o.code) for o in outcomes]
    return frame(_encoder.encode((contexts_created, items, retire)))


def decode_response(body: bytes) -> tuple[int, list[ScriptOutcome | None], bool]:
    contexts, items, retire = _response_decoder.decode(body)
    outcomes = [None if item == _NOT_RUN else ScriptOutcome(*item) for item in items]
    return contexts, outcomes, retire
