"""Every multi-key atomic operation names keys of one hash slot (checked on the key names)."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from chatflow.handlers.keys import Keys

# The slow tier: a three-node Valkey cluster (python -m pytest -m slow).
pytestmark = pytest.mark.slow


def _slot(key: str) -> int:
    return int(key_slot(key.encode()))


def test_every_key_a_commit_script_may_touch_is_in_its_partitions_slot() -> None:
    keys = Keys("p:", 16)
    for n in range(16):
        partition = {keys.steps(n), keys.outbox(n), keys.state(n, f"{n}-abc"),
                     keys.state(n, f"{n}-abc.3"), keys.command_guard(n, "cmd-1"), keys.done(n, "r"),
                     keys.deadlines(n), keys.definition(n, "digest"), keys.events(n, f"{n}-abc")}
        assert len({_slot(k) for k in partition}) == 1


def test_a_publish_markers_slot_is_its_target_streams_slot() -> None:
    keys = Keys("p:", 4)
    for stream in (keys.results, keys.executions, keys.debug("5511"), keys.llm_usage,
                   keys.dead_letters, "custom:reply-stream"):
        assert _slot(Keys.sent_marker(stream, "0:1-0")) == _slot(stream)


def test_a_tools_projection_keys_share_one_slot() -> None:
    keys = Keys("p:", 4)
    for tool in ("t-1", "t-chaos-http"):
        assert len({_slot(keys.proj_log(tool)), _slot(keys.proj_events(tool)),
                    _slot(keys.proj_buckets(tool))}) == 1
