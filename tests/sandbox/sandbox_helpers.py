from __future__ import annotations

from chatflow.runtime.sandbox import ScriptJob, ScriptLimits, ScriptOutcome, ScriptSandbox

TEST_LIMITS = ScriptLimits(timeout_ms=250, max_memory_bytes=64 * 1024 * 1024)
# Memory bombs must reach the memory limit before the time limit: normally well under a
# second, but a Map bomb on a loaded machine (load average 24 on 2 cores) took over 10 s.
ROOMY_LIMITS = ScriptLimits(timeout_ms=120_000, max_memory_bytes=64 * 1024 * 1024)

RUNAWAY = "for (;;) {}"
MEMORY_BOMBS = {
    "arrays": "const a = []; for (;;) a.push(new Array(100000).fill(1.5));",
    "objects": "const a = []; for (let i = 0; ; i++) a.push({ i, s: 'v' + i });",
    "map": "const m = new Map(); for (let i = 0; ; i++) m.set(i, [i]);",
    "strings": "const a = []; for (let i = 0; ; i++) a.push(String(i).padStart(1000, '-'));",
}


async def run(box: ScriptSandbox, source: str, **inputs: object) -> ScriptOutcome:
    return await box.run(ScriptJob(source, inputs))
