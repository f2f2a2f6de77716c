"""The facts an emit carries beside its message (what the metrics count without decoding the
worker's own message again) say what the message says, for every execution and result."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from chatflow.runtime.state import Emit, StepMsg, Transition
from chatflow.schemas.wire import ToolExecutionStreamEvent, ToolResult
from tests.core.tools import call, http, ret, to, tool
from tests.machine.driver import Driver, Run, command
from tests.machine.test_tables import failing


@dataclass
class Recording(Driver):
    emits: list[Emit] = field(default_factory=list)

    def _apply(self, run: Run, t: Transition, queue: deque[StepMsg]) -> None:
        self.emits.extend(t.emits)
        super()._apply(run, t, queue)


TOOLS = {"pt": tool("c", call("c", "child", "v", to("r"), on_error="continue", error_variable="e"),
                    ret("r", "v={{v}} e={{e}}")),
         "child": tool("h", http("h", "http://x", to("r")), ret("r", "inner"))}


@pytest.mark.parametrize("run_ahead", [False, True])
@pytest.mark.parametrize("outcomes", [None, failing("http_status", "boom")],
                         ids=["ok", "child fails"])
def test_each_execution_and_result_emit_carries_the_facts_its_message_holds(
        run_ahead: bool, outcomes: Any) -> None:
    driver = Recording(TOOLS, run_ahead=run_ahead, tick_ms=3,
                       **({"outcomes": outcomes} if outcomes else {}))
    driver.run(command("pt"))
    executions = [e for e in driver.emits if e.kind == "execution"]
    results = [e for e in driver.emits if e.kind == "result"]
    assert len(executions) == 2 and len(results) == 1
    for emit in executions:
        event = msgspec.json.decode(emit.data, type=ToolExecutionStreamEvent)
        assert emit.facts == (event.publishedToolId, event.success, event.errorCode,
                              event.durationMs)
    assert {e.facts[1] for e in executions} == ({True} if outcomes is None else {True, False})
    (result,) = results
    assert result.facts == msgspec.json.decode(result.data, type=ToolResult).ok
