"""The definition's extensions for calls to the outside world (SPEC, "Extensions to the
definition"): a block's ``retry`` policy, and an integration server's ``limits``,
``circuitBreaker`` and ``idempotencyHeader``. Defaults are SPEC's; docs/spec.md lists them.

pydantic, like the rest of the definition: validated once (publish, or the first time a
worker meets a definition), every problem reported with its path. Unknown keys are refused
here (``extra="forbid"``): a misspelt ``maxAtempts`` must not silently mean "the default".
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

RetryKind = Literal["5xx", "timeout", "connection"]
RetryOn = int | RetryKind
DEFAULT_RETRY_ON: tuple[RetryOn, ...] = (429, 502, 503, 504, "timeout", "connection")
MAX_ATTEMPTS = 10
# An HTTP header name (RFC 9110 token).
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$")
DEFAULT_IDEMPOTENCY_HEADER = "Idempotency-Key"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RetryPolicy(_Strict):
    """How often, and how far apart, a block's call is attempted again after a failure it
    may retry (runtime/retry.py decides). ``maxAttempts`` counts the first attempt."""

    maxAttempts: int = Field(default=3, ge=1, le=MAX_ATTEMPTS)
    initialIntervalMs: int = Field(default=200, ge=0, le=60_000)
    backoffCoefficient: float = Field(default=2.0, ge=1.0, le=10.0)
    maxIntervalMs: int = Field(default=5_000, ge=0, le=60_000)
    retryOn: tuple[RetryOn, ...] = DEFAULT_RETRY_ON

    @field_validator("retryOn")
    @classmethod
    def _statuses(cls, value: tuple[RetryOn, ...]) -> tuple[RetryOn, ...]:
        for item in value:
            if isinstance(item, int) and not 400 <= item <= 599:
                raise ValueError(f"{item} is not an HTTP error status (400 to 599)")
        return value

    @model_validator(mode="after")
    def _intervals(self) -> RetryPolicy:
        if self.maxIntervalMs < self.initialIntervalMs:
            raise ValueError(f"maxIntervalMs ({self.maxIntervalMs}) is less than "
                             f"initialIntervalMs ({self.initialIntervalMs})")
        return self


class ServerLimits(_Strict):
    """Held across every worker (handlers/dataplane/edge.py). ``burst`` defaults to one
    second's worth of ``requestsPerSecond`` (at least 1)."""

    requestsPerSecond: float | None = Field(default=None, gt=0, le=100_000)
    burst: int | None = Field(default=None, ge=1, le=100_000)
    maxConcurrent: int | None = Field(default=None, ge=1, le=10_000)

    @model_validator(mode="after")
    def _something(self) -> ServerLimits:
        if self.requestsPerSecond is None and self.maxConcurrent is None:
            raise ValueError("give requestsPerSecond, maxConcurrent or both")
        if self.burst is not None and self.requestsPerSecond is None:
            raise ValueError("burst needs requestsPerSecond")
        return self

    @property
    def effective_burst(self) -> int:
        if self.burst is not None:
            return self.burst
        return max(1, int(self.requestsPerSecond or 1))


class CircuitBreakerPolicy(_Strict):
    """After ``failureThreshold`` failures (connection errors, timeouts, 5xx) within
    ``windowMs``, calls fail at once for ``cooldownMs``; then one probe goes through."""

    failureThreshold: int = Field(default=5, ge=1, le=10_000)
    windowMs: int = Field(default=30_000, ge=100, le=3_600_000)
    cooldownMs: int = Field(default=15_000, ge=100, le=3_600_000)


def header_name(value: str | None) -> str | None:
    """``idempotencyHeader``: a header name, or None for no key."""
    if value is not None and not _HEADER_NAME.match(value):
        raise ValueError(f"{value!r} is not an HTTP header name")
    return value


class OriginLimits(_Strict):
    """One entry of ``CHATFLOW_ORIGIN_LIMITS``: an origin's limits for plain httpCall, and
    optionally its circuit breaker."""

    requestsPerSecond: float | None = Field(default=None, gt=0, le=100_000)
    burst: int | None = Field(default=None, ge=1, le=100_000)
    maxConcurrent: int | None = Field(default=None, ge=1, le=10_000)
    circuitBreaker: CircuitBreakerPolicy | None = None

    @model_validator(mode="after")
    def _something(self) -> OriginLimits:
        if (self.requestsPerSecond is None and self.maxConcurrent is None
                and self.circuitBreaker is None):
            raise ValueError("give requestsPerSecond, maxConcurrent, circuitBreaker or several")
        if self.burst is not None and self.requestsPerSecond is None:
            raise ValueError("burst needs requestsPerSecond")
        return self

    def limits(self) -> ServerLimits | None:
        if self.requestsPerSecond is None and self.maxConcurrent is None:
            return None
        return ServerLimits(requestsPerSecond=self.requestsPerSecond, burst=self.burst,
                            maxConcurrent=self.maxConcurrent)


__all__ = ["DEFAULT_IDEMPOTENCY_HEADER", "DEFAULT_RETRY_ON", "MAX_ATTEMPTS",
           "CircuitBreakerPolicy", "OriginLimits", "RetryOn", "RetryPolicy", "ServerLimits",
           "header_name"]
