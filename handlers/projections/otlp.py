"""OTLP/HTTP export of the tracing projection's spans: one ``ExportTraceServiceRequest`` per
POST, many trees in it, sent by the OpenTelemetry SDK's own OTLP/HTTP client.

* The request's spans are written as protobuf bytes (``wire.py``); its resource (the SDK's
  ``Resource``: ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``) and instrumentation
  scope are encoded once, by the exporter package's own encoders, not once per span as the
  SDK's span encoder does (a third of its cost was hashing the resource for every span).
* It is sent by the HTTP client inside the SDK's ``OTLPSpanExporter`` (built with the
  endpoint, it reads ``OTEL_EXPORTER_OTLP_HEADERS``, ``_COMPRESSION``, ``_TIMEOUT``, the
  certificate variables and the credential provider itself, and retries 429/502/503/504 and
  lost connections with backoff). The exporter's ``export`` only takes the SDK's span
  objects, so the already-encoded request goes to the client it sends with
  (``OTLPSpanExporter._client.export``): one private name of the pinned release line
  (pyproject.toml), checked when the projection starts and by tests/tracing, which send
  through it to a real receiver with headers and gzip set by those variables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import structlog
from opentelemetry.exporter.otlp.proto.common._internal import (
    _encode_instrumentation_scope,
    _encode_resource,
)

from ..operations.tracing import SCOPE
from . import wire
from .spans import Spans

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource as SdkResource

log = structlog.get_logger("chatflow.tracing")
_SCOPE: bytes = _encode_instrumentation_scope(SCOPE).SerializeToString()


class _Result(Protocol):
    success: bool


class _Client(Protocol):
    def export(self, data: bytes) -> _Result: ...

    def shutdown(self) -> None: ...


class Outgoing:
    """One request being filled: its spans (``wire.span``'s) go into ``spans``."""

    def __init__(self, resource: bytes, schema_url: str) -> None:
        self.resource = resource
        self.schema_url = schema_url
        self.spans: Spans = []
        self.count = 0  # spans in it

    def body(self) -> bytes:
        return wire.request(self.resource, self.schema_url, _SCOPE, self.spans)


class Sender:
    """Sends requests through the SDK exporter's HTTP client (blocking: run in a thread)."""

    def __init__(self, endpoint: str, resource: SdkResource, client: _Client | None = None
                 ) -> None:
        self.resource: bytes = _encode_resource(resource).SerializeToString()
        self.schema_url = resource.schema_url or ""
        self._exporter: Any = None
        if client is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            self._exporter = OTLPSpanExporter(endpoint=endpoint)
            client = getattr(self._exporter, "_client", None)
            if not callable(getattr(client, "export", None)):
                raise RuntimeError("opentelemetry-exporter-otlp-proto-http has no _client.export "
                                   "(a release outside the line pyproject.toml pins)")
        self.client: _Client = client  # type: ignore[assignment]

    def request(self) -> Outgoing:
        return Outgoing(self.resource, self.schema_url)

    def send(self, request: Outgoing) -> bool:
        """POST one request; whether the collector took it (the client retried what it may)."""
        try:
            return bool(self.client.export(request.body()).success)
        except Exception:  # the client maps its own errors; anything else is one failed POST
            log.exception("OTLP export failed")
            return False

    def shutdown(self) -> None:
        if self._exporter is not None:
            self._exporter.shutdown()
        else:
            self.client.shutdown()


__all__ = ["Outgoing", "Sender"]
