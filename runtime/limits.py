"""The seed's guardrails. Defaults match the seed; each is configurable via Limits."""

from __future__ import annotations

from dataclasses import dataclass

TOOL_TIMEOUT_MS = 30_000
MAX_TOOL_HOPS = 50
MAX_TOOL_DEPTH = 5
MAX_TOOL_INVOCATIONS = 50
HTTP_TIMEOUT_MS = 10_000


@dataclass(frozen=True, slots=True)
class Limits:
    tool_timeout_ms: int = TOOL_TIMEOUT_MS
    max_hops: int = MAX_TOOL_HOPS
    max_depth: int = MAX_TOOL_DEPTH
    max_invocations: int = MAX_TOOL_INVOCATIONS
    http_timeout_ms: int = HTTP_TIMEOUT_MS
    max_rendered_chars: int = 1_000_000
