"""What a script returns and how its failures are reported."""

from __future__ import annotations

from typing import Any

import pytest

from chatflow.runtime.sandbox import ScriptJob, ScriptSandbox
from tests.sandbox.sandbox_helpers import run


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("return 'hello'", "hello"),
        ("return 42", 42),
        ("return 1.5", 1.5),
        ("return true", True),
        ("return false", False),
        ("return null", None),
        ("return [1, 'two', [3]]", [1, "two", [3]]),
        ("return {a: {b: [null, 2.5]}, c: 'd'}", {"a": {"b": [None, 2.5]}, "c": "d"}),
    ],
)
async def test_a_script_returns_each_json_type(
    sandbox: ScriptSandbox, source: str, expected: Any
) -> None:
    outcome = await run(sandbox, source)
    assert outcome.ok, outcome
    assert outcome.value == expected
    assert type(outcome.value) is type(expected)


async def test_a_script_without_return_gives_none(sandbox: ScriptSandbox) -> None:
    outcome = await run(sandbox, "const x = 1;")
    assert outcome.ok and outcome.value is None


async def test_returning_undefined_gives_none(sandbox: ScriptSandbox) -> None:
    outcome = await run(sandbox, "return undefined")
    assert outcome.ok and outcome.value is None


async def test_inputs_are_available_on_the_input_object(sandbox: ScriptSandbox) -> None:
    outcome = await run(
        sandbox, "return input.greeting + ', ' + input['name']", greeting="hi", name="Ann"
    )
    assert outcome.value == "hi, Ann"


async def test_inputs_with_identifier_names_are_bare_bindings(sandbox: ScriptSandbox) -> None:
    job = ScriptJob("return price * qty + $fee + _x", {"price": 2, "qty": 3, "$fee": 1, "_x": 0})
    outcome = await sandbox.run(job)
    assert outcome.value == 7


async def test_inputs_with_other_names_are_only_on_the_input_object(
    sandbox: ScriptSandbox,
) -> None:
    job = ScriptJob(
        "return [input['my-var'], input.class, input.input, typeof input]",
        {"my-var": 1, "class": 2, "input": 3},
    )
    outcome = await sandbox.run(job)
    assert outcome.value == [1, 2, 3, "object"]


async def test_json_input_values_arrive_as_javascript_values(sandbox: ScriptSandbox) -> None:
    outcome = await run(
        sandbox,
        "return [items.length, items[1].n, flags.on === true, nothing === null]",
        items=[{"n": 1}, {"n": 2}],
        flags={"on": True},
        nothing=None,
    )
    assert outcome.value == [2, 2, True, True]


async def test_an_input_named_proto_is_an_ordinary_value(sandbox: ScriptSandbox) -> None:
    job = ScriptJob("return [input['__proto__'], Object.keys(input)]", {"__proto__": 5})
    outcome = await sandbox.run(job)
    assert outcome.value == [5, ["__proto__"]]


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("return () => 1", "function"),
        ("return {f() {}}.f", "function"),
        ("return {nested: [() => 1]}", "function"),
        ("return 10n", "bigint"),
        ("return Symbol('s')", "symbol"),
        ("const a = {}; a.self = a; return a", "cyclic structure"),
        ("return Promise.resolve(1)", "Promise"),
    ],
)
async def test_a_non_json_result_is_a_clear_error(
    sandbox: ScriptSandbox, source: str, kind: str
) -> None:
    outcome = await run(sandbox, source)
    assert not outcome.ok
    assert outcome.code == "script_result"
    assert outcome.error is not None
    assert outcome.error.startswith(f"script result is not JSON-serialisable: {kind}")


async def test_a_syntax_error_is_reported_as_script_syntax(sandbox: ScriptSandbox) -> None:
    outcome = await run(sandbox, "return 1 +")
    assert outcome.code == "script_syntax"
    assert outcome.error is not None and outcome.error.startswith("SyntaxError:")


async def test_source_cannot_break_out_of_its_function_body(sandbox: ScriptSandbox) -> None:
    outcome = await run(sandbox, "}); let leaked = 1; (function () {")
    assert outcome.code == "script_syntax"
    assert (await run(sandbox, "return typeof leaked")).value == "undefined"


async def test_a_thrown_error_is_reported_with_its_name_and_message(
    sandbox: ScriptSandbox,
) -> None:
    outcome = await run(sandbox, "throw new TypeError('bad input')")
    assert outcome == outcome.failure("script_error", "TypeError: bad input")


async def test_a_thrown_non_error_value_is_reported(sandbox: ScriptSandbox) -> None:
    outcome = await run(sandbox, "throw 'plain string'")
    assert outcome.code == "script_error"
    assert outcome.error == "Uncaught plain string"


async def test_an_error_subclass_can_set_its_own_name(sandbox: ScriptSandbox) -> None:
    source = """
    class NotFound extends Error {
      constructor(m) { super(m); this.name = 'NotFound'; }
    }
    const plain = {}; plain.toString = () => 'custom';
    if (String(plain) !== 'custom') return 'override failed';
    throw new NotFound('no such user');
    """
    outcome = await run(sandbox, source)
    assert outcome.error == "NotFound: no such user"


async def test_an_input_that_is_not_json_fails_only_its_own_job(sandbox: ScriptSandbox) -> None:
    outcomes = await sandbox.run_many(
        [ScriptJob("return 1", {"bad": object()}), ScriptJob("return 2", {})]
    )
    assert outcomes[0].code == "script_error"
    assert outcomes[0].error is not None and "not JSON-serialisable" in outcomes[0].error
    assert outcomes[1].value == 2


async def test_common_builtins_work_in_scripts(sandbox: ScriptSandbox) -> None:
    source = """
    const d = new Date(Date.UTC(2024, 0, 2));
    return {
      mapped: [3, 1, 2].map((v) => v * 2).sort(),
      json: JSON.parse('{"a": [1]}').a,
      regex: 'a-b-c'.replace(/-/g, '+'),
      date: d.toISOString(),
      set: [...new Set([1, 1, 2])],
      math: Math.max(1, 5),
      intl: new Intl.NumberFormat('en-US').format(1234.5),
      entries: Object.entries({k: 1}),
    };
    """
    outcome = await run(sandbox, source)
    assert outcome.value == {
        "mapped": [2, 4, 6],
        "json": [1],
        "regex": "a+b+c",
        "date": "2024-01-02T00:00:00.000Z",
        "set": [1, 2],
        "math": 5,
        "intl": "1,234.5",
        "entries": [["k", 1]],
    }
