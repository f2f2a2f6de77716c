"""A block's retry policy, decided as pure code: classify an attempt's outcome, compute the
wait before the next one (backoff with jitter, ``Retry-After``), and check the tree's
deadline. No clock, no randomness of its own: the caller passes ``now`` and a jitter seed,
so a decision is the same whenever it is made again (replay, a redelivered step).

The wait itself is not here, nor in any task: the machine turns a :class:`Retry` into a
step scheduled for ``now + wait_ms`` (runtime/machine.py, ``Transition.delayed``), which
Valkey holds until it is due (handlers/dataplane/delayed.py).

Semantics follow Temporal's ``RetryPolicy`` (initial interval, backoff coefficient, maximum
interval, maximum attempts) with two differences that a chat turn needs: the tree's
deadline bounds every wait, and ``Retry-After`` wins when it asks for longer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal

from chatflow.schemas.edge import RetryOn, RetryPolicy

from .errors import ToolFailure
from .state import Attempt

# An attempt needs some time to be worth starting: one that could begin only this close to
# the deadline is not made (its timeout would be the remainder, and a failure there is the
# tree's timeout, not the block's error).
MIN_ATTEMPT_MS = 100
# Jitter spreads the attempts of a burst of failures: each wait is the backoff times a
# factor in [1 - JITTER, 1 + JITTER] (then capped at maxIntervalMs).
JITTER = 0.2

# Failures of the transport, by the codes the executors give them (runtime/outbound.py and
# the codes callAI and fetchMedia map them to). A status failure is classified by its status.
_TIMEOUTS = frozenset({"http_timeout", "llm_timeout", "media_timeout"})
_CONNECTIONS = frozenset({"http_error", "llm_unreachable", "media_unreachable"})

Kind = int | Literal["timeout", "connection"]
GiveUpReason = Literal["not_retryable", "attempts", "deadline"]


@dataclass(frozen=True, slots=True)
class Retry:
    """Attempt again after ``wait_ms``."""

    wait_ms: int


@dataclass(frozen=True, slots=True)
class GiveUp:
    """The block ends with its last outcome."""

    reason: GiveUpReason


def classify(status: int | None, code: str | None) -> Kind | None:
    """What failed, in ``retryOn``'s terms: a status (≥ 400), ``timeout``, ``connection``;
    None for a failure no policy retries (a refused URL, a body too large...)."""
    if status is not None and status >= 400:
        return status
    if code in _TIMEOUTS:
        return "timeout"
    if code in _CONNECTIONS:
        return "connection"
    return None


def matches(retry_on: tuple[RetryOn, ...], kind: Kind) -> bool:
    if kind in retry_on:
        return True
    return isinstance(kind, int) and 500 <= kind <= 599 and "5xx" in retry_on


def backoff_ms(policy: RetryPolicy, attempts_made: int, jitter: float) -> int:
    """The wait after the ``attempts_made``-th attempt: ``initialIntervalMs`` times
    ``backoffCoefficient`` per attempt after the first, jittered by ``jitter`` in [0, 1),
    at most ``maxIntervalMs``."""
    base = policy.initialIntervalMs * policy.backoffCoefficient ** max(0, attempts_made - 1)
    factor = 1 - JITTER + 2 * JITTER * jitter
    return int(min(policy.maxIntervalMs, base * factor))


def retry_after_ms(value: str | None, now_ms: int) -> int | None:
    """``Retry-After`` as milliseconds from ``now_ms``: delta-seconds or an HTTP date; None
    when absent or unreadable (a bad header is ignored, never a failure)."""
    if not value:
        return None
    text = value.strip()
    if text.isdecimal():
        return int(text) * 1000
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0, int(when.timestamp() * 1000) - now_ms)


def jitter_of(*parts: object) -> float:
    """A number in [0, 1) from ``parts``: the same for the same attempt of the same visit,
    different from one execution to another."""
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def decide(policy: RetryPolicy, *, attempts_made: int, kind: Kind | None,
           retry_after: int | None, now_ms: int, deadline_ms: int,
           jitter: float) -> Retry | GiveUp:
    """After a failed attempt (``attempts_made`` counts it): try again, or give up."""
    if kind is None or not matches(policy.retryOn, kind):
        return GiveUp("not_retryable")
    if attempts_made >= policy.maxAttempts:
        return GiveUp("attempts")
    wait = backoff_ms(policy, attempts_made, jitter)
    if retry_after is not None and retry_after > wait:
        wait = retry_after
    if now_ms + wait + MIN_ATTEMPT_MS > deadline_ms:
        return GiveUp("deadline")
    return Retry(wait)


def attempt_of(status: int | None, failure: ToolFailure | None, duration_ms: int,
               wait_ms: int) -> Attempt:
    """One attempt as the debug event and the trace show it: its status when the upstream
    answered, else its error code."""
    if status is not None:
        return Attempt(status=status, durationMs=duration_ms, waitMs=wait_ms)
    return Attempt(error=failure.code if failure else None, durationMs=duration_ms,
                   waitMs=wait_ms)


def gave_up(failure: ToolFailure, attempts: int, reason: GiveUpReason) -> ToolFailure:
    """The block's last error, its message saying how many attempts were made (and, when
    the deadline stopped them, why no more were)."""
    made = f"{attempts} tentativa" + ("s" if attempts != 1 else "")
    if reason == "deadline":
        note = f"após {made}; a próxima não começaria antes do prazo da tool"
    else:
        note = f"após {made}"
    return ToolFailure(failure.code, f"{failure.message} ({note})", fatal=failure.fatal)


__all__ = ["JITTER", "MIN_ATTEMPT_MS", "GiveUp", "Retry", "attempt_of", "backoff_ms",
           "classify", "decide", "gave_up", "jitter_of", "matches", "retry_after_ms"]
