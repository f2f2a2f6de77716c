"""A block's retry policy as pure code, table by table: what an attempt's failure is, the
wait before the next one (backoff, jitter, Retry-After), the deadline, the message when
the block gives up; then the machine with it (tests/machine/driver.py plays the worker).
No Redis, no clock: runtime/retry.py takes ``now`` and a jitter seed."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from chatflow.runtime import retry
from chatflow.runtime.errors import ErrorCode
from chatflow.runtime.machine import Machine
from chatflow.runtime.outcome import BlockOutcome
from chatflow.schemas.definition import ToolDefinition, format_validation_error
from chatflow.schemas.edge import RetryPolicy
from tests.core.tools import http, ret, to, tool
from tests.machine.driver import Driver, command

POLICY = RetryPolicy()  # SPEC's defaults: 3 attempts, 200 ms, x2, 5 s, 429/502/503/504/timeout/connection

CLASSIFY = [
    ("a status failure is its status", 503, "http_status", 503),
    ("a 4xx is its status too", 404, "http_status", 404),
    ("httpCall's timeout", None, "http_timeout", "timeout"),
    ("callAI's timeout", None, "llm_timeout", "timeout"),
    ("fetchMedia's timeout", None, "media_timeout", "timeout"),
    ("a refused connection", None, "http_error", "connection"),
    ("callAI's unreachable provider", None, "llm_unreachable", "connection"),
    ("a URL egress refuses is no upstream failure", None, "egress_denied", None),
    ("a body over the cap is none either", 200, "http_body_too_large", None),
]


@pytest.mark.parametrize(("why", "status", "code", "kind"), CLASSIFY, ids=[r[0] for r in CLASSIFY])
def test_each_failure_is_classified_as_its_row_says(why: str, status: int | None, code: str,
                                                    kind: Any) -> None:
    assert retry.classify(status, code) == kind


MATCHES = [
    ("a listed status", (503,), 503, True),
    ("an unlisted status", (503,), 500, False),
    ("5xx takes every 5xx", ("5xx",), 500, True),
    ("5xx takes no 4xx", ("5xx",), 429, False),
    ("timeout", ("timeout",), "timeout", True),
    ("connection is not timeout", ("timeout",), "connection", False),
]


@pytest.mark.parametrize(("why", "retry_on", "kind", "expected"), MATCHES,
                         ids=[r[0] for r in MATCHES])
def test_retry_on_matches_as_its_row_says(why: str, retry_on: Any, kind: Any,
                                          expected: bool) -> None:
    assert retry.matches(retry_on, kind) is expected


BACKOFF = [
    ("the first wait is the initial interval (no jitter at the middle)", 1, 0.5, 200),
    ("the second is doubled", 2, 0.5, 400),
    ("the third doubled again", 3, 0.5, 800),
    ("jitter at its lowest takes 20% off", 1, 0.0, 160),
    ("jitter at its highest adds 20%", 1, 0.999999, 239),
    ("capped at maxIntervalMs", 9, 0.5, 5_000),
    ("capped after jitter too", 6, 0.999999, 5_000),
]


@pytest.mark.parametrize(("why", "made", "jitter", "expected"), BACKOFF, ids=[r[0] for r in BACKOFF])
def test_each_backoff_is_as_its_row_says(why: str, made: int, jitter: float, expected: int) -> None:
    assert retry.backoff_ms(POLICY, made, jitter) == expected


NOW = 1_700_000_000_000  # 2023-11-14T22:13:20Z
RETRY_AFTER = [
    ("seconds", "1", 1_000),
    ("seconds with spaces", " 3 ", 3_000),
    ("an HTTP date 5 s ahead", "Tue, 14 Nov 2023 22:13:25 GMT", 5_000),
    ("an HTTP date past is no wait", "Tue, 14 Nov 2023 22:13:00 GMT", 0),
    ("absent", None, None),
    ("unreadable is ignored", "soon", None),
    ("a negative number is unreadable", "-1", None),
]


@pytest.mark.parametrize(("why", "value", "expected"), RETRY_AFTER, ids=[r[0] for r in RETRY_AFTER])
def test_retry_after_reads_as_its_row_says(why: str, value: str | None,
                                           expected: int | None) -> None:
    assert retry.retry_after_ms(value, NOW) == expected


DEADLINE = NOW + 30_000
DECIDE = [
    ("a 503 after the first attempt waits the backoff", 1, 503, None, NOW, retry.Retry(200)),
    ("a 404 is not retried", 1, 404, None, NOW, retry.GiveUp("not_retryable")),
    ("no kind (a refused URL) is not retried", 1, None, None, NOW, retry.GiveUp("not_retryable")),
    ("the third attempt was the last", 3, 503, None, NOW, retry.GiveUp("attempts")),
    ("a longer Retry-After wins", 1, 429, 1_000, NOW, retry.Retry(1_000)),
    ("a shorter Retry-After does not", 1, 429, 50, NOW, retry.Retry(200)),
    ("Retry-After may pass maxIntervalMs", 1, 429, 9_000, NOW, retry.Retry(9_000)),
    ("a wait that ends past the deadline is not taken", 1, 503, None, DEADLINE - 250,
     retry.GiveUp("deadline")),
    ("nor one that leaves no time for the attempt", 1, 503, None,
     DEADLINE - 200 - retry.MIN_ATTEMPT_MS + 1, retry.GiveUp("deadline")),
    ("one that leaves it just enough is", 1, 503, None,
     DEADLINE - 200 - retry.MIN_ATTEMPT_MS, retry.Retry(200)),
    ("a Retry-After past the deadline ends the block", 1, 429, 60_000, NOW,
     retry.GiveUp("deadline")),
]


@pytest.mark.parametrize(("why", "made", "kind", "after", "now", "expected"), DECIDE,
                         ids=[r[0] for r in DECIDE])
def test_each_decision_is_as_its_row_says(why: str, made: int, kind: Any, after: int | None,
                                          now: int, expected: Any) -> None:
    assert retry.decide(POLICY, attempts_made=made, kind=kind, retry_after=after, now_ms=now,
                        deadline_ms=DEADLINE, jitter=0.5) == expected


def test_jitter_is_the_same_for_the_same_attempt_and_spread_across_executions() -> None:
    assert retry.jitter_of("0-a", "h", 0, 1) == retry.jitter_of("0-a", "h", 0, 1)
    values = [retry.jitter_of(f"0-{i}", "h", 0, 1) for i in range(200)]
    assert all(0 <= j < 1 for j in values)
    assert len({int(j * 10) for j in values}) == 10  # every tenth of [0, 1) is used


GAVE_UP = [
    ("attempts used up", 3, "attempts", "GET x: HTTP 503 (após 3 tentativas)"),
    ("the deadline, after one", 1, "deadline",
     "GET x: HTTP 503 (após 1 tentativa; a próxima não começaria antes do prazo da tool)"),
    ("not retryable after two", 2, "not_retryable", "GET x: HTTP 503 (após 2 tentativas)"),
]


@pytest.mark.parametrize(("why", "made", "reason", "message"), GAVE_UP, ids=[r[0] for r in GAVE_UP])
def test_a_block_that_gives_up_says_how_many_attempts_it_made(why: str, made: int, reason: Any,
                                                               message: str) -> None:
    failure = retry.gave_up(ErrorCode.HTTP_STATUS.failure(method="GET", url="x", status=503), made, reason)
    assert (failure.code, failure.message) == ("http_status", message)


# -- the machine with a policy --------------------------------------------------------------

def replies(*statuses: int, policy: dict[str, Any] | None = None) -> Any:
    """The outcome of each attempt in turn: a status (≥ 400 fails), as httpCall reports it."""
    seen: list[int] = []
    parsed = RetryPolicy.model_validate(policy or {})

    def outcome(_state: Any, _block: Any) -> BlockOutcome:
        status = statuses[min(len(seen), len(statuses) - 1)]
        seen.append(status)
        error = ErrorCode.HTTP_STATUS.failure(method="GET", url="x", status=status) if status >= 400 else None
        return BlockOutcome(writes={"st": status}, error=error, debug={"status": status},
                            duration_ms=7, retry=parsed)

    return outcome


def retried(**policy: Any) -> dict[str, Any]:
    return tool("h", http("h", "http://x", to("r"), retry=policy or None),
                ret("r", "{{st}}"))


MACHINE = [
    ("a 503 then a 200 answers ok after one wait", (503, 200), {}, True, "200", [503, 200]),
    ("three 503s fail after three attempts", (503,), {}, False,
     "GET x: HTTP 503 (após 3 tentativas)", [503, 503, 503]),
    ("a 404 fails at once, its message as it was", (404,), {}, False, "GET x: HTTP 404",
     [404]),
    ("maxAttempts 1 never retries", (503,), {"maxAttempts": 1}, False, "GET x: HTTP 503",
     [503]),
    ("5xx in retryOn retries a 500", (500, 200), {"retryOn": ["5xx"]}, True, "200",
     [500, 200]),
]


@pytest.mark.parametrize(("why", "statuses", "policy", "ok", "expected", "attempts"), MACHINE,
                         ids=[r[0] for r in MACHINE])
def test_the_machine_retries_as_its_row_says(why: str, statuses: tuple[int, ...],
                                             policy: dict[str, Any], ok: bool, expected: str,
                                             attempts: list[int]) -> None:
    driver = Driver({"pt": retried(**policy)}, replies(*statuses, policy=policy))
    run = driver.run(command("pt"))
    assert run.result.ok is ok
    assert (run.result.result if ok else run.result.error and run.result.error.message) == expected
    (block,) = [e for e in run.log if e.type == "block" and e.blockId == "h"]
    assert [a["status"] for a in (block.detail or {})["attempts"]] == attempts
    assert len(run.delayed) == len(attempts) - 1


def test_a_retry_writes_no_state_and_waits_the_backoff_from_when_the_attempt_ended() -> None:
    machine = Machine()
    driver = Driver({"pt": retried()}, replies(503, 200), machine)
    run = driver.run(command("pt"))
    # The wait is a delayed step at the version the attempt started from: no state written,
    # no log line, so the redelivered or duplicated step it replaces commits nothing twice.
    retry_commits = [c for c in run.committed if b'"delayed":[[' in c]
    assert len(retry_commits) == 1 and b'"writes":[]' in retry_commits[0]
    assert b'"log":[]' in retry_commits[0]
    (block,) = [e for e in run.log if e.type == "block" and e.blockId == "h"]
    first, second = (block.detail or {})["attempts"]
    assert first == {"status": 503, "durationMs": 7, "waitMs": 0}
    assert 160 <= second["waitMs"] <= 240, second  # 200 ms, jittered
    assert run.delayed[0] - 1_000 <= 250


def test_the_writes_of_a_retried_attempt_are_not_kept() -> None:
    statuses = iter([503, 200])

    def outcome(_s: Any, _b: Any) -> BlockOutcome:
        status = next(statuses)
        error = ErrorCode.HTTP_STATUS.failure(method="GET", url="x", status=status) if status >= 400 else None
        return BlockOutcome(writes={"st": status, f"only{status}": 1}, error=error,
                            debug={"status": status}, retry=RetryPolicy())

    run = Driver({"pt": retried()}, outcome).run(command("pt"))
    root = run.states["0-root"]
    assert "only503" not in root.variables and root.variables["only200"] == 1


def test_a_fatal_failure_is_never_retried() -> None:
    def outcome(_s: Any, _b: Any) -> BlockOutcome:
        return BlockOutcome(error=ErrorCode.EXECUTION_CANCELLED.failure("x"),
                            retry=RetryPolicy())

    run = Driver({"pt": retried()}, outcome).run(command("pt"))
    assert run.result.error is not None and run.result.error.code == "execution_cancelled"
    assert run.delayed == []


# -- a definition's policy, validated by name ---------------------------------------------------

BAD = [
    ("an unknown field is named", {"maxAtempts": 3}, "blocks.h.retry.maxAtempts: Extra inputs"),
    ("more than ten attempts", {"maxAttempts": 11}, "blocks.h.retry.maxAttempts: Input should be"),
    ("a status that is no error", {"retryOn": [200]}, "blocks.h.retry.retryOn: Value error, 200 is"),
    ("an unknown kind", {"retryOn": ["sometimes"]}, "blocks.h.retry.retryOn.0"),
    ("a coefficient below one", {"backoffCoefficient": 0.5},
     "blocks.h.retry.backoffCoefficient: Input should be greater than or equal to 1"),
    ("a cap below the first interval", {"initialIntervalMs": 500, "maxIntervalMs": 100},
     "blocks.h.retry: Value error, maxIntervalMs (100) is less than initialIntervalMs (500)"),
]


@pytest.mark.parametrize(("why", "policy", "problem"), BAD, ids=[r[0] for r in BAD])
def test_a_bad_policy_is_refused_naming_its_field(why: str, policy: dict[str, Any],
                                                  problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ToolDefinition.model_validate(retried(**policy))
    lines = format_validation_error(caught.value)
    assert any(line.startswith(problem) for line in lines), lines
