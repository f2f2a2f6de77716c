"""executeScript: JavaScript in the V8 sandbox (see runtime/sandbox and docs/sandbox.md)."""

from __future__ import annotations

import time

from chatflow.schemas.definition import ExecuteScriptBlock

from ..errors import ErrorCode
from ..limits import Limits, json_size, script_result_too_large
from ..outcome import BlockOutcome
from ..sandbox import ScriptJob, ScriptSandbox
from ..state import ExecState
from .common import remaining_ms, value_of


async def run_script(
    sandbox: ScriptSandbox, state: ExecState, block: ExecuteScriptBlock, limits: Limits,
    now_ms: int, script_timeout_ms: int,
) -> BlockOutcome:
    started = time.perf_counter()
    inputs = {m.name: value_of(m.value, state, limits.max_rendered_chars)
              for m in block.inputVariables}
    timeout = min(script_timeout_ms, remaining_ms(state, now_ms))
    outcome = await sandbox.run(ScriptJob(block.source, inputs, timeout, owner=state.toolId))
    duration = int((time.perf_counter() - started) * 1000)
    if outcome.ok:
        # Checked here, before the value reaches the state, a step or the event log: a
        # script's result is the one value a tool's author can make any size.
        size = json_size(outcome.value)
        if size > limits.script_result_max_bytes:
            return BlockOutcome(writes={block.outputVariable: ""}, duration_ms=duration,
                                error=script_result_too_large(size, limits.script_result_max_bytes))
        return BlockOutcome(writes={block.outputVariable: outcome.value},
                            debug={"result": outcome.value}, duration_ms=duration)
    code = ErrorCode.lookup(outcome.code or "") or ErrorCode.SCRIPT_ERROR
    failure = code.failure(cause=outcome.error or "script failed")
    return BlockOutcome(writes={block.outputVariable: ""}, error=failure, duration_ms=duration)
