"""OTLP ``Span`` messages written as protobuf wire bytes, for the tracing projection.

Why not opentelemetry-proto's generated classes: from Python, every field set on a upb message
and every attribute added costs a call into the extension and a wrapper object; a span of the
projection's cost 2.5 to 6 µs that way, where the whole of tracing at 100 % sampling may add
less than 0.3x a bench-3 worker's CPU (about 40 µs for an execution's five spans, read,
built and sent: docs/scale.md "Tracing"). Written here, a span costs a few hundred ns.

Only the messages a span holds are written (``Span``, ``KeyValue``, ``AnyValue``,
``ArrayValue``, ``Span.Event``, ``Status``) and the three wrappers of a request; the field
numbers are opentelemetry-proto's (``opentelemetry/proto/trace/v1/trace.proto``, stable since
OTLP 1.0). The resource and the scope are serialized by opentelemetry-proto itself, once.
tests/tracing/test_wire.py decodes what this writes with opentelemetry-proto and compares it,
field by field, with the same span built through the generated classes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

# Tags: (field number << 3) | wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
_NAME, _KIND = b"\x2a", b"\x30"  # trace_id (1), span_id (2), parent_span_id (4): inline
_START_END = struct.Struct("<BQBQ")  # start_time_unix_nano (7), end_time_unix_nano (8)
_ATTRIBUTE, _EVENT, _STATUS, _FLAGS = b"\x4a", b"\x5a", b"\x7a", b"\x85\x01"
_FIXED32 = struct.Struct("<I")
_EVENT_TIME = struct.Struct("<BQ")  # Event.time_unix_nano (1)
_DOUBLE = struct.Struct("<Bd")  # AnyValue.double_value (4)
_INT64 = 1 << 64

KIND_INTERNAL, KIND_CLIENT, KIND_CONSUMER = 1, 3, 5  # Span.SpanKind
STATUS_ERROR = 2  # Status.StatusCode


_BYTE = [bytes((n,)) for n in range(0x80)]  # the varints of one byte, made once
_FLAGS_OF: dict[int, bytes] = {}


def varint(n: int) -> bytes:
    if n < 0x80:
        return _BYTE[n]
    if n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: a string, bytes or an embedded message."""
    n = len(payload)
    return tag + (_BYTE[n] if n < 0x80 else varint(n)) + payload


def any_value(value: Any) -> bytes:
    """An ``AnyValue``, typed as the SDK's encoder types it (a list is an array)."""
    kind = type(value)
    if kind is str:
        return field(b"\x0a", value.encode())
    if kind is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if kind is int:
        return b"\x18" + varint(value % _INT64)  # int64: two's complement
    if kind is float:
        return _DOUBLE.pack(0x21, value)
    if isinstance(value, list | tuple):
        scalars = (v if isinstance(v, bool | int | float) else str(v) for v in value)
        return field(b"\x2a", b"".join(field(b"\x0a", any_value(v)) for v in scalars))
    return field(b"\x0a", str(value).encode())


def attribute(key: str, value: Any) -> bytes:
    """One ``KeyValue`` as a span's ``attributes`` field; None writes nothing, as the SDK
    drops it."""
    if value is None:
        return b""
    return field(_ATTRIBUTE, field(b"\x0a", key.encode()) + field(b"\x12", any_value(value)))


def key(name: str) -> bytes:
    """A string attribute's key as ``text`` takes it (made once per name)."""
    return field(b"\x0a", name.encode()) + b"\x12"


def text(key: bytes, value: str) -> bytes:
    """``attribute`` for a string, its ``key`` made by ``key``: the ids every span carries
    (written inline: a third of ``attribute``'s calls)."""
    v = value.encode()
    n = len(v)
    if n >= 0x7E:
        return field(_ATTRIBUTE, key + field(b"", field(b"\x0a", v)))
    kv = key + _BYTE[n + 2] + b"\x0a" + _BYTE[n] + v
    m = len(kv)
    return _ATTRIBUTE + (_BYTE[m] if m < 0x80 else varint(m)) + kv


def attributes(values: Mapping[str, Any]) -> bytes:
    return b"".join(attribute(k, v) for k, v in values.items())


def shape(name: str, kind: int, values: Mapping[str, Any]) -> bytes:
    """What the spans of one block or tool share: name, kind and constant attributes."""
    return field(_NAME, name.encode()) + _KIND + varint(kind) + attributes(values)


def ids(trace_id: bytes, parent_id: bytes, flags: int) -> bytes:
    """A span's trace (16 bytes), parent (8 bytes; b"" for a root) and flags: shared by an
    execution's spans."""
    flag = _FLAGS_OF.get(flags)
    if flag is None:
        flag = _FLAGS_OF[flags] = _FLAGS + _FIXED32.pack(flags)
    if parent_id:
        return b"\x0a\x10" + trace_id + b"\x22\x08" + parent_id + flag
    return b"\x0a\x10" + trace_id + flag


def span(span_id: bytes, start_ns: int, end_ns: int, *parts: bytes) -> bytes:
    """One span of a ``ScopeSpans`` (its ``spans`` field, framed): its id (8 bytes) and
    times, then ``parts`` (``ids``, ``shape``, ``attribute``s, ``status``, ``event``s) as
    they are: protobuf reads fields in any order, and a message's fields one after the
    other."""
    body = b"".join((b"\x12\x08", span_id, _START_END.pack(0x39, start_ns, 0x41, end_ns),
                     *parts))
    n = len(body)
    return b"\x12" + (_BYTE[n] if n < 0x80 else varint(n)) + body


def status(code: int, message: str) -> bytes:
    inner = (field(b"\x12", message.encode()) if message else b"") + b"\x18" + varint(code)
    return field(_STATUS, inner)


def event(name: str, time_ns: int, values: Mapping[str, Any]) -> bytes:
    inner = _EVENT_TIME.pack(0x09, time_ns) + field(b"\x12", name.encode())
    inner += b"".join(field(b"\x1a", field(b"\x0a", k.encode()) + field(b"\x12", any_value(v)))
                      for k, v in values.items() if v is not None)
    return field(_EVENT, inner)


def request(resource: bytes, schema_url: str, scope: bytes, spans: Iterable[bytes]) -> bytes:
    """An ``ExportTraceServiceRequest`` of one resource and one scope: ``resource`` and
    ``scope`` serialized (opentelemetry-proto's), ``spans`` each from ``span``."""
    scope_spans = field(b"\x0a", scope) + b"".join(spans)
    resource_spans = field(b"\x0a", resource) + field(b"\x12", scope_spans)
    if schema_url:
        resource_spans += field(b"\x1a", schema_url.encode())
    return field(b"\x0a", resource_spans)


__all__ = ["KIND_CLIENT", "KIND_CONSUMER", "KIND_INTERNAL", "STATUS_ERROR", "any_value", "attribute",
           "attributes", "event", "field", "ids", "key", "request", "shape", "span", "status",
           "text", "varint"]
