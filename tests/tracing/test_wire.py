"""The projection's protobuf writer (handlers/projections/wire.py) against opentelemetry-proto:
what it writes decodes, field by field, to the span the generated classes build."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span, Status

from chatflow.handlers.projections import wire

TRACE, SPAN, PARENT = bytes(range(1, 17)), bytes(range(20, 28)), bytes(range(40, 48))
VALUES: list[Any] = ["", "x", "é" * 70, "y" * 200, "z" * 20_000, 0, 1, -1, 2**63 - 1, -(2**63),
                     300, True, False, 0.5, -1e300, ["a", 1, 2.5, True], []]


def _value(value: Any) -> AnyValue:
    out = AnyValue()
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, list):
        out.array_value.SetInParent()
        out.array_value.values.extend(_value(v) for v in value)
    else:
        out.string_value = value
    return out


@pytest.mark.parametrize("value", VALUES, ids=lambda v: repr(v)[:20])
def test_an_attribute_decodes_to_the_generated_classes_own(value: Any) -> None:
    expected = Span(attributes=[KeyValue(key="k.ey", value=_value(value))])
    assert Span.FromString(wire.attribute("k.ey", value)) == expected
    if isinstance(value, str):
        assert Span.FromString(wire.text(wire.key("k.ey"), value)) == expected


def test_none_is_no_attribute_at_all() -> None:
    assert wire.attribute("k", None) == b""


@pytest.mark.parametrize("parent", [PARENT, b""])
@pytest.mark.parametrize("size", [0, 1, 200, 20_000])  # one, two and three length bytes
def test_a_span_decodes_to_the_generated_classes_own(parent: bytes, size: int) -> None:
    written = wire.span(
        SPAN, 1_700_000_000_000_000_000, 1_700_000_000_123_000_000,
        wire.ids(TRACE, parent, 0x300),
        wire.shape("chatflow.block httpCall h", wire.KIND_CLIENT, {"chatflow.block_id": "h"}),
        wire.text(wire.key("chatflow.execution_id"), "e" * size),
        wire.status(wire.STATUS_ERROR, "http_error: 502"),
        wire.event("chatflow.attempt", 1_700_000_000_001_000_000,
                   {"http.request.resend_count": 0, "error.type": None}),
        wire.event("chatflow.attempt", 1_700_000_000_002_000_000, {}))
    expected = Span(
        trace_id=TRACE, span_id=SPAN, parent_span_id=parent, flags=0x300,
        name="chatflow.block httpCall h", kind=Span.SpanKind.SPAN_KIND_CLIENT,
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_000_123_000_000,
        attributes=[KeyValue(key="chatflow.block_id", value=_value("h")),
                    KeyValue(key="chatflow.execution_id", value=_value("e" * size))],
        status=Status(code=Status.StatusCode.STATUS_CODE_ERROR, message="http_error: 502"),
        events=[Span.Event(name="chatflow.attempt", time_unix_nano=1_700_000_000_001_000_000,
                           attributes=[KeyValue(key="http.request.resend_count",
                                                value=_value(0))]),
                Span.Event(name="chatflow.attempt", time_unix_nano=1_700_000_000_002_000_000)])
    assert ScopeSpans.FromString(written).spans == [expected]


@pytest.mark.parametrize("schema_url", ["", "https://opentelemetry.io/schemas/1.21.0"])
def test_a_request_holds_one_resource_one_scope_and_every_span(schema_url: str) -> None:
    resource = Resource(attributes=[KeyValue(key="service.name", value=_value("chatflow"))])
    scope = InstrumentationScope(name="chatflow")
    spans = [wire.span(bytes([n]) * 8, n, n + 1, wire.ids(TRACE, b"", 0x100)) for n in (1, 2, 3)]
    body = wire.request(resource.SerializeToString(), schema_url, scope.SerializeToString(), spans)
    decoded = ExportTraceServiceRequest.FromString(body)
    (resource_spans,) = decoded.resource_spans
    assert resource_spans.resource == resource
    assert resource_spans.schema_url == schema_url
    (scope_spans,) = resource_spans.scope_spans
    assert scope_spans.scope == scope
    assert [s.span_id for s in scope_spans.spans] == [bytes([n]) * 8 for n in (1, 2, 3)]
    assert all(s.trace_id == TRACE and s.flags == 0x100 for s in scope_spans.spans)
