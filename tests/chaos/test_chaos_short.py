"""The short form of ``python -m bench.chaos``: worker processes SIGKILLed under load."""

from __future__ import annotations

import pytest

from tests.support.chaos import run

# The slow tier: worker processes killed under load (python -m pytest -m slow).
pytestmark = pytest.mark.slow


async def test_every_command_gets_one_result_while_workers_are_killed_every_few_seconds(
        redis_url: str) -> None:
    report = await run(redis_url, executions=600, seconds=60, workers=3, kill_every=1.5,
                       rate=50, seed=11)
    print(report.render())
    assert report.kills >= 3
    assert (report.results, report.lost, report.duplicates) == (600, 0, 0)
    assert report.failed == 0 and report.wrong == 0
    # The workers wrote a SQLite run history: every execution in it once, as its event says.
    assert report.history and report.history_rows == report.events - report.event_duplicates
    assert (report.history_missing, report.history_differ) == (0, 0)
    # Replay after the kills: every tree still in Valkey re-decides as it was recorded.
    assert report.replayed >= 500 and report.replay_differ == 0, report.notes
    # A quarter of the mix calls an upstream that fails a fifth of first attempts, with a
    # retry policy: every such execution sent one idempotency key, whatever its attempts and
    # redeliveries, its effect happened, and some attempts were retried.
    assert report.retry_executions == 150 and report.keys_ok, report.render()
    assert report.retry_requests > report.retry_executions


async def test_every_execution_event_is_counted_once_by_the_projection_despite_kills(
        redis_url: str) -> None:
    report = await run(redis_url, executions=300, seconds=60, workers=2, kill_every=1.5,
                       rate=40, seed=12)
    assert report.kills >= 2
    assert report.event_duplicates == 0
    assert report.projection == {tool: (n, n) for tool, n in report.expected_events.items()}


async def test_exactly_one_span_per_committed_block_visit_while_workers_are_killed(
        redis_url: str) -> None:
    """Tracing on, workers SIGKILLed: every committed execution and block visit is one span
    at the (loopback OTLP) collector, none lost with a killed worker's unexported batch and
    none doubled by a redelivered step or a reclaimed export."""
    report = await run(redis_url, executions=300, seconds=90, workers=3, kill_every=3.0,
                       rate=20, seed=13, history=False, tracing=True)
    print(report.render())
    assert report.kills >= 2
    assert (report.results, report.lost, report.duplicates) == (300, 0, 0)
    assert report.spans_expected >= 300 * 3
    assert (report.spans_missing, report.spans_extra, report.span_repeats_differ) == (0, 0, 0), \
        report.render()
