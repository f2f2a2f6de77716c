"""No state leaks between jobs, and no way out of the sandbox."""

from __future__ import annotations

import pytest

from chatflow.runtime.sandbox import ScriptJob, ScriptSandbox
from tests.sandbox.sandbox_helpers import run


async def _in_one_context(box: ScriptSandbox, first: str, second: str) -> list[object]:
    """Run two jobs in one batch and then again in two batches, on the same context."""
    await run(box, "return 0")  # start the context before counting
    contexts = box.contexts_created
    together = await box.run_many([ScriptJob(first, {}), ScriptJob(second, {})])
    await run(box, first)
    apart = await run(box, second)
    assert box.contexts_created == contexts
    return [together[1].value, apart.value]


POLLUTERS = [
    "Object.prototype.polluted = 'yes'",
    "Array.prototype.polluted = 'yes'",
    "({}).__proto__.polluted = 'yes'",
    "Object.setPrototypeOf(Object.prototype, {polluted: 'yes'})",
    "Object.defineProperty(Object.prototype, 'polluted', {value: 'yes'})",
    "String.prototype.polluted = 'yes'",
]


@pytest.mark.parametrize("polluter", POLLUTERS)
async def test_prototype_pollution_in_one_job_is_not_visible_in_the_next(
    sandbox: ScriptSandbox, polluter: str
) -> None:
    first = f"try {{ {polluter}; }} catch (e) {{}} return 1"
    second = "return [({}).polluted, [].polluted, ''.polluted].map(String)"
    values = await _in_one_context(sandbox, first, second)
    assert values == [["undefined"] * 3] * 2


async def test_a_pollution_attempt_fails_loudly_in_its_own_job(sandbox: ScriptSandbox) -> None:
    outcome = await run(sandbox, "Object.prototype.polluted = 1")
    assert outcome.code == "script_error"
    assert outcome.error is not None and outcome.error.startswith("TypeError")


async def test_replacing_builtins_is_not_visible_in_the_next_job(sandbox: ScriptSandbox) -> None:
    first = """
    for (const f of [() => { Math.max = () => -1; }, () => { JSON.stringify = null; },
                     () => { Array.prototype.push = null; }, () => { delete Array.prototype.map; },
                     () => { Object.getPrototypeOf([].values()).next = null; },
                     () => { Object.getPrototypeOf(function* () {}).extra = 1; }]) {
      try { f(); } catch (e) {}
    }
    return 1
    """
    second = """
    const a = [1]; a.push(2);
    return [Math.max(1, 2), typeof JSON.stringify, a.map((v) => v).length,
            [...[7].values()][0], Object.getPrototypeOf(function* () {}).extra === undefined]
    """
    values = await _in_one_context(sandbox, first, second)
    assert values == [[2, "function", 2, 7, True]] * 2


@pytest.mark.parametrize(
    "writer",
    ["globalThis.leak = 1", "leak = 1", "var leak = 1; globalThis.leak2 = leak", "this.leak = 1"],
)
async def test_global_writes_are_not_visible_in_the_next_job(
    sandbox: ScriptSandbox, writer: str
) -> None:
    first = f"try {{ {writer}; }} catch (e) {{}} return 1"
    second = "return [typeof leak, typeof globalThis.leak, typeof globalThis.leak2]"
    values = await _in_one_context(sandbox, first, second)
    assert values == [["undefined"] * 3] * 2


async def test_input_mutation_is_not_visible_in_the_next_job(sandbox: ScriptSandbox) -> None:
    shared = {"items": [1, 2]}
    outcomes = await sandbox.run_many(
        [
            ScriptJob("input.items.push(3); items.push(4); return input.items", shared),
            ScriptJob("return items", shared),
        ]
    )
    assert [o.value for o in outcomes] == [[1, 2, 3, 4], [1, 2]]
    assert shared == {"items": [1, 2]}


async def test_regexp_matches_do_not_leak_through_legacy_statics(
    sandbox: ScriptSandbox,
) -> None:
    first = "/secret-(\\w+)/.exec(input.s); return 1"
    outcomes = await sandbox.run_many(
        [
            ScriptJob(first, {"s": "secret-hunter2"}),
            ScriptJob("return [RegExp.$1, RegExp.lastMatch]", {}),
        ]
    )
    assert outcomes[1].value == [None, None]


async def test_the_runner_is_not_reachable_from_scripts(sandbox: ScriptSandbox) -> None:
    source = """
    const names = Reflect.ownKeys(globalThis).map(String);
    return names.filter((n) => n.startsWith('__cf') || n === 'S');
    """
    assert (await run(sandbox, source)).value == []


@pytest.mark.parametrize(
    ("probe", "message"),
    [
        ("return require('fs')", "ReferenceError: require is not defined"),
        ("return process.env", "ReferenceError: process is not defined"),
        ("return fetch('http://example.com')", "ReferenceError: fetch is not defined"),
        ("return XMLHttpRequest", "ReferenceError: XMLHttpRequest is not defined"),
        ("return setTimeout(() => 1, 0)", "TypeError: setTimeout is not a function"),
        ("return setInterval(() => 1, 0)", "ReferenceError: setInterval is not defined"),
        ("return WebAssembly.Module", "ReferenceError: WebAssembly is not defined"),
        ("return SharedArrayBuffer", "ReferenceError: SharedArrayBuffer is not defined"),
        ("return Atomics.wait", "ReferenceError: Atomics is not defined"),
        ("return new WeakRef({})", "ReferenceError: WeakRef is not defined"),
        ("return new FinalizationRegistry(() => 1)", "ReferenceError: FinalizationRegistry"),
        ("return eval('1 + 1')", "ReferenceError: eval is not defined"),
        ("return Function('return this')()", "EvalError: Function constructor is disabled"),
        (
            "return (function () {}).constructor('return this')()",
            "EvalError: Function constructor is disabled",
        ),
        (
            "return (async function () {}).constructor('return 1')",
            "EvalError: AsyncFunction constructor is disabled",
        ),
        (
            "return (function* () {}).constructor('yield 1')",
            "EvalError: GeneratorFunction constructor is disabled",
        ),
        ("return import('fs')", "script result is not JSON-serialisable: Promise"),
    ],
)
async def test_probes_for_host_capabilities_fail_with_clear_errors(
    sandbox: ScriptSandbox, probe: str, message: str
) -> None:
    outcome = await run(sandbox, probe)
    assert not outcome.ok
    assert outcome.error is not None and outcome.error.startswith(message), outcome.error


async def test_strict_mode_hides_the_global_object_from_this(sandbox: ScriptSandbox) -> None:
    source = "return [typeof this, (function () { return typeof this; })()]"
    assert (await run(sandbox, source)).value == ["undefined", "undefined"]


async def test_a_import_statement_is_a_syntax_error(sandbox: ScriptSandbox) -> None:
    outcome = await run(sandbox, "import fs from 'fs'; return 1")
    assert outcome.code == "script_syntax"


async def test_console_exists_and_does_nothing(sandbox: ScriptSandbox) -> None:
    outcome = await run(sandbox, "console.log('x'); console.error('y'); return 'quiet'")
    assert outcome.value == "quiet"
