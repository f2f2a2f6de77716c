"""The machine builds execution states positionally (runtime/machine.py ``start`` and
``spawn``: keywords cost msgspec four times the struct itself for this many fields), so the
order of ExecState's fields is part of that code. msgspec checks no type when a struct is
built, so a reordered field would be a silently wrong state: this test fails first."""

from __future__ import annotations

from chatflow.runtime.state import ExecState


def test_the_fields_of_an_execution_state_keep_the_order_the_machine_builds_them_in() -> None:
    assert ExecState.__struct_fields__[:17] == (
        "execId", "rootId", "partition", "depth", "toolId", "publishedToolId", "defHash",
        "block", "variables", "context", "root", "startedMs", "deadlineMs", "debug", "frames",
        "hops", "invocations")
