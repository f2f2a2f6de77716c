"""A loopback OTLP/HTTP trace receiver: what a collector is to the runtime, in a test.

``otlp_receiver()`` serves ``POST /v1/traces`` on 127.0.0.1 from a thread (worker processes
and in-process workers alike can reach it), decodes each body as the real
``ExportTraceServiceRequest`` protobuf (opentelemetry-proto) and keeps every span. Tests wait
on a condition (``wait_for``), never sleep. ``fail_next`` answers the next requests with 503,
as a collector that is down does.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.http import serve_asgi_in_thread


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def decoded(spans: list[bytes]) -> list[Any]:
    """Spans the projection wrote (``SpanBuilder.spans``: each a ``ScopeSpans``' ``spans``
    field) decoded by opentelemetry-proto."""
    return list(ScopeSpans.FromString(b"".join(spans)).spans)


def attributes_of(span: Any) -> dict[str, Any]:
    """A protobuf span's (or event's) attributes as a mapping."""
    return {a.key: _value(a.value) for a in span.attributes}


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    attributes: dict[str, Any]
    status: int  # 0 unset, 1 ok, 2 error
    start_ns: int
    end_ns: int
    service: str
    events: tuple[str, ...] = ()
    raw: bytes = b""  # the span's protobuf, to compare two deliveries of one span


@dataclass
class Receiver:
    url: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    refused: int = 0
    _fail: int = 0
    _cond: threading.Condition = field(default_factory=threading.Condition)

    @property
    def endpoint(self) -> str:
        """What OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set to."""
        return self.url + "/v1/traces"

    def fail_next(self, n: int) -> None:
        with self._cond:
            self._fail = n

    def take(self, body: bytes) -> int:
        request = ExportTraceServiceRequest.FromString(body)
        with self._cond:
            self.requests += 1
            if self._fail > 0:
                self._fail -= 1
                self.refused += 1
                return 503
            for rs in request.resource_spans:
                service = next((_value(a.value) for a in rs.resource.attributes
                                if a.key == "service.name"), "")
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(ReceivedSpan(
                            s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), s.name,
                            s.kind, attributes_of(s),
                            s.status.code, s.start_time_unix_nano, s.end_time_unix_nano,
                            str(service), tuple(e.name for e in s.events),
                            s.SerializeToString(deterministic=True)))
            self._cond.notify_all()
        return 200

    def wait_for(self, done: Callable[[list[ReceivedSpan]], bool],
                 timeout_s: float = 30.0) -> list[ReceivedSpan]:
        """Wait until ``done(spans)`` holds; the spans received so far."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not done(self.spans):
                left = deadline - time.monotonic()
                if left <= 0:
                    names = sorted({s.name for s in self.spans})
                    raise TimeoutError(f"spans not received in {timeout_s}s: "
                                       f"{len(self.spans)} so far ({names[:20]})")
                self._cond.wait(left)
            return list(self.spans)

    async def wait(self, done: Callable[[list[ReceivedSpan]], bool],
                   timeout_s: float = 30.0) -> list[ReceivedSpan]:
        """``wait_for`` from a coroutine: the event loop (an in-process worker) runs on."""
        return await asyncio.to_thread(self.wait_for, done, timeout_s)

    def snapshot(self) -> list[ReceivedSpan]:
        with self._cond:
            return list(self.spans)


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    async def traces(request: Request) -> Response:
        status = receiver.take(await request.body())
        body = ExportTraceServiceResponse().SerializeToString() if status == 200 else b""
        return Response(body, status_code=status, media_type="application/x-protobuf")

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    with serve_asgi_in_thread(app) as base:
        receiver.url = base
        yield receiver
