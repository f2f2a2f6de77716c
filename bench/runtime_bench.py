"""The runtime's own decision path per execution, in process: no Valkey, no worker.

    python -m bench.runtime_bench [--executions 10000] [--scenarios bench-3,scripts-3]

For each execution: the intake's ``Machine.start`` for a decoded command, then
``RunAhead.carry`` as the worker's shared run-ahead does it (a callTool's child loaded
from an in-memory tool source; a script's outcome given, not run in V8), down to the
transition that answers the tool. Prints CPU µs per execution (``time.process_time``,
so a loaded machine inflates it less than wall time) and the machine calls per
execution. The commit, the stream I/O and the sandbox are the stream benchmark's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from typing import Any

import msgspec

from bench.stream_bench import BENCH_3, BENCH_CHILD  # the tools stream_bench drives too
from chatflow.runtime.blocks.common import value_of
from chatflow.runtime.definitions import DefinitionCache
from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.machine import Machine
from chatflow.runtime.outcome import BlockOutcome, SpawnChild
from chatflow.runtime.runahead import RunAhead
from chatflow.runtime.state import ExecState, Transition
from chatflow.schemas.definition import CallToolBlock, RunnableBlock, ToolDefinition
from chatflow.schemas.wire import ExecuteToolCommand


def _script(block_id: str, nxt: str) -> dict[str, Any]:
    return {"type": "executeScript", "id": block_id, "source": "return n", "outputVariable": block_id,
            "inputVariables": [{"name": "n", "value": "{{n}}"}], "onError": "blocking",
            "outputConditions": [], "defaultOutput": {"type": "block", "blockId": nxt}}


SCRIPTS_3 = {"id": "pt-scripts", "toolId": "t-scripts", "name": "scripts", "definition": {
    "onboardingBlockId": "a", "blocks": {
        "a": _script("a", "b"), "b": _script("b", "c"), "c": _script("c", "r"),
        "r": {"type": "return", "id": "r", "value": "{{a}} {{b}} {{c}}"}}}}

TOOLS = {t["id"]: json.dumps(t).encode() for t in (BENCH_CHILD, BENCH_3, SCRIPTS_3)}
SCENARIOS = {"bench-3": "pt-bench", "scripts-3": "pt-scripts"}


class Path:
    """The intake's and the shared run-ahead's calls, with an in-memory tool source."""

    def __init__(self) -> None:
        self.machine = Machine()
        self.cache = DefinitionCache()
        self.now = 1_700_000_000_000
        self.run_ahead = RunAhead(self.machine, self._definition, run_block=self._run_block,
                                  clock=lambda: self.now)

    def _definition(self, digest: str) -> ToolDefinition | None:
        published = self.cache.get(digest)
        return published.definition if published else None

    async def _run_block(self, state: ExecState, block: RunnableBlock) -> Transition:
        result: BlockOutcome | SpawnChild | ToolFailure
        if isinstance(block, CallToolBlock):  # what BlockRunner._load_child does
            parsed = self.cache.parse(block.publishedToolId, TOOLS.get(block.publishedToolId))
            if isinstance(parsed, ToolFailure):
                result = parsed
            else:
                inputs = {m.name: value_of(m.value, state, 1_000_000) for m in block.inputVariables}
                result = SpawnChild(*parsed, inputs)
        else:
            result = BlockOutcome(writes={block.outputVariable: state.variables.get("n")})
        return self.machine.after_run(state, block, result, self.now)

    async def execute(self, cmd: ExecuteToolCommand, i: int) -> Transition | None:
        pt = cmd.action.publishedToolId
        parsed = self.cache.parse(pt, TOOLS[pt])
        assert not isinstance(parsed, ToolFailure)
        t = self.machine.start(cmd, parsed[0], parsed[1], parsed[2], exec_id=f"0-{i:032x}",
                               partition=0, now=self.now, debug=False)
        (carried,) = await self.run_ahead.carry(0, [t])
        return carried


def command(pt: str, n: int) -> ExecuteToolCommand:
    return msgspec.convert({
        "commandId": f"cmd-{n}", "action": {
            "id": "a", "type": "executeTool", "toolId": f"t-{pt}", "publishedToolId": pt,
            "outputVariable": "out", "inputVariables": [{"name": "n", "value": str(n)}]},
        "context": {"contactId": "bench"}}, ExecuteToolCommand)


def counted(machine: Machine) -> Counter[str]:
    """Count the machine's public calls on this instance (the counts are exact, unlike time)."""
    calls: Counter[str] = Counter()
    for name in ("start", "plan", "after_run", "after_block", "spawn", "after_child"):
        method = getattr(machine, name)

        def wrapped(*args: Any, _m: Any = method, _n: str = name, **kwargs: Any) -> Any:
            calls[_n] += 1
            return _m(*args, **kwargs)

        setattr(machine, name, wrapped)
    return calls


async def measure(pt: str, executions: int, repeat: int = 1) -> tuple[float, Counter[str], int]:
    """CPU µs per execution, the least of ``repeat`` rounds: on a shared machine the other
    processes only ever add time, so the least round is the closest to the path's own."""
    path = Path()
    commands = [command(pt, i) for i in range(executions)]
    for i in range(min(200, executions)):  # warm the caches and the interpreter
        await path.execute(commands[i], i)
    cpu = float("inf")
    for _ in range(repeat):
        answered = 0
        started = time.process_time()
        for i, cmd in enumerate(commands):
            t = await path.execute(cmd, i)
            answered += bool(t and t.finishes_root)
        cpu = min(cpu, time.process_time() - started)
    probe = Path()
    calls = counted(probe.machine)
    await probe.execute(commands[0], 0)
    return cpu / executions * 1e6, calls, answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=10_000)
    parser.add_argument("--scenarios", default="bench-3,scripts-3")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds per scenario; the least CPU time is printed")
    args = parser.parse_args()
    for name in args.scenarios.split(","):
        us, calls, answered = asyncio.run(measure(SCENARIOS[name], args.executions, args.repeat))
        assert answered == args.executions, f"{name}: {answered} of {args.executions} answered"
        print(f"{name:<10} {us:7.1f} µs CPU/execution   machine calls/execution: "
              + " ".join(f"{k}={v}" for k, v in sorted(calls.items())))


if __name__ == "__main__":
    main()
