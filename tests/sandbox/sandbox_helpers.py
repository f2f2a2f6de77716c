from __future__ import annotations

from chatflow.runtime.sandbox import ScriptJob, ScriptLimits, ScriptOutcome, ScriptSandbox

TEST_LIMITS = ScriptLimits(timeout_ms=250, max_memory_bytes=64 * 1024 * 1024)
ROOMY_LIMITS = ScriptLimits(timeout_ms=10_000, max_memory_bytes=64 * 1024 * 1024)

RUNAWAY = "for (;;) {}"
MEMORY_BOMBS = {
    "arrays": "const a = []; for (;;) a.push(new Array(100000).fill(1.5));",
    "objects": "const a = []; for (let i = 0; ; i++) a.push({ i, s: 'v' + i });",
    "map": "const m = new Map(); for (let i = 0; ; i++) m.set(i, [i]);",
    "strings": "const a = []; for (let i = 0; ; i++) a.push(String(i).padStart(1000, '-'));",
}


async def run(box: ScriptSandbox, source: str, **inputs: object) -> ScriptOutcome:
    return await box.run(ScriptJob(source, inputs))
