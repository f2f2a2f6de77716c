"""occurredAt: the ISO text of an epoch-ms timestamp, a second formatted once (runtime/events.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from chatflow.runtime.events import iso


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 4_102_444_800_000))  # the epoch to 2100
def test_iso_text_is_what_datetime_formats_to_the_millisecond(ms: int) -> None:
    expected = datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    assert iso(ms) == expected
    assert iso(ms) == expected  # and again, from the cached second


def test_two_instants_of_one_second_keep_their_own_milliseconds() -> None:
    assert (iso(1_700_000_000_007), iso(1_700_000_000_999)) == (
        "2023-11-14T22:13:20.007+00:00", "2023-11-14T22:13:20.999+00:00")
