"""Sandbox abuse corpus through the stream runtime: each abusive executeScript is contained with a
clear error result, and memory stays bounded over 1,000 abusive runs (RSS of the sandbox worker
process and of the test process, which hosts the stream worker)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import psutil
import pytest

from tests.core.tools import ret, script, tool
from tests.harness import Harness

# The slow tier: long sandbox abuse (python -m pytest -m slow).
pytestmark = pytest.mark.slow

MiB = 1024 * 1024

# (name, source, accepted error codes; empty = must succeed with the returned value "contained")
CORPUS: list[tuple[str, str, set[str]]] = [
    ("infinite loop", "while (true) {}", {"script_timeout"}),
    ("infinite for", "for (;;) { Math.random(); }", {"script_timeout"}),
    ("memory bomb array", "const a = []; while (true) a.push({x: new Array(1000).fill(1)});",
     {"script_memory", "script_timeout"}),
    ("memory bomb string", "let s = 'x'; while (true) s = s + s;", {"script_memory"}),
    ("array buffer bomb", "return new ArrayBuffer(2 ** 31).byteLength", {"script_memory"}),
    ("runaway promise callback", "Promise.resolve().then(() => { for (;;) {} }); return 1",
     {"script_timeout"}),
    ("deep recursion", "const f = n => f(n + 1) + 1; return f(0)", {"script_error"}),
    ("prototype pollution", "Object.prototype.polluted = 1; return 1", {"script_error"}),
    ("array prototype pollution", "Array.prototype.push = () => 0; return 1", {"script_error"}),
    ("global write", "globalThis.leak = 1; return 1", {"script_error"}),
    ("require", "return require('fs')", {"script_error"}),
    ("process", "return process.env", {"script_error"}),
    ("fetch", "return fetch('http://169.254.169.254/')", {"script_error"}),
    ("xhr", "return new XMLHttpRequest()", {"script_error"}),
    ("setTimeout", "setTimeout(() => {}, 0); return 1", {"script_error"}),
    ("setInterval", "setInterval(() => {}, 0); return 1", {"script_error"}),
    ("dynamic import", "return import('fs')", {"script_result", "script_error"}),
    ("static import", "import fs from 'fs'; return 1", {"script_syntax"}),
    ("eval", "return eval('1 + 1')", {"script_error"}),
    ("Function constructor", "return Function('return this')()", {"script_error"}),
    ("constructor escape", "return (() => {}).constructor('return globalThis')()", {"script_error"}),
    ("this is undefined", "return this.constructor", {"script_error"}),
    ("WebAssembly", "return WebAssembly.Module", {"script_error"}),
    ("SharedArrayBuffer", "return new SharedArrayBuffer(8)", {"script_error"}),
    ("break out", "}); let leaked = 1; (function(){", {"script_syntax"}),
    ("throw a string", "throw 'boom'", {"script_error"}),
    ("returns a function", "return () => 1", {"script_result"}),
    ("returns a promise", "return Promise.resolve(1)", {"script_result"}),
    ("cyclic result", "const o = {}; o.o = o; return o", {"script_result"}),
]
# Host-object probes that must find nothing: they return a value rather than throw.
PROBES = ["typeof require", "typeof process", "typeof fetch", "typeof setTimeout", "typeof module",
          "typeof Deno", "typeof Bun", "typeof __dirname", "typeof globalThis.python"]


@pytest.fixture
async def sandboxed(redis_url: str, prefix: str) -> AsyncIterator[Harness]:
    """A worker with tight script limits, so runaway scripts are cut short quickly."""
    # One lane: one V8 worker process, so the memory test compares that process with itself
    # (with a lane per core, a second lane's worker may start only during the abuse and its
    # whole RSS would read as growth).
    h = Harness(redis_url, prefix, script_timeout_ms=100, script_max_memory_mb=16, script_lanes=1)
    await h.start_worker()
    try:
        yield h
    finally:
        await h.close()


def script_tool(source: str) -> dict[str, object]:
    return tool("s", script("s", source, "out", {"type": "block", "blockId": "r"}),
                ret("r", "{{out}}"))


def sandbox_rss() -> int:
    """RSS of the sandbox worker processes under this test process."""
    total = 0
    for child in psutil.Process().children(recursive=True):
        try:
            if "chatflow.runtime.sandbox._worker" in " ".join(child.cmdline()):
                total += child.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total


async def _run_all(h: Harness, sources: list[str]) -> dict[int, tuple[bool, str, str]]:
    """Publish every source as its own tool run in one batch; one bounded wait for all results."""
    for source in sorted(set(sources)):
        await h.put_tool(f"pt-{abs(hash(source))}", script_tool(source))
    after = await h.mark()
    ids = {}
    batch = uuid.uuid4().hex[:8]  # commandIds are run once: every call needs fresh ones
    for i, source in enumerate(sources):
        cid = f"abuse-{batch}-{i}"
        ids[cid] = i
        await h.send(h.command(f"pt-{abs(hash(source))}", command_id=cid))
    found = await h.results_after(after, set(ids), timeout_s=120)
    out: dict[int, tuple[bool, str, str]] = {}
    for cid, i in ids.items():
        (result,) = found[cid]
        error = result.error
        out[i] = (result.ok, error.code if error else "", error.message if error else result.result)
    return out


async def test_every_abusive_script_is_contained_with_a_clear_error(sandboxed: Harness) -> None:
    sources = [source for _name, source, _codes in CORPUS]
    results = await _run_all(sandboxed, sources)
    wrong = [(name, results[i]) for i, (name, _s, codes) in enumerate(CORPUS)
             if results[i][0] or results[i][1] not in codes or not results[i][2]]
    assert wrong == []


async def test_host_object_probes_find_nothing(sandboxed: Harness) -> None:
    results = await _run_all(sandboxed, [f"return {p}" for p in PROBES])
    assert [results[i] for i in range(len(PROBES))] == [(True, "", "undefined")] * len(PROBES)


async def test_memory_stays_bounded_over_a_thousand_abusive_runs(sandboxed: Harness) -> None:
    # Warm up: start the sandbox worker and build its first context. The warm-up's last
    # script may be one whose worker process is killed (a memory bomb dies with it, and the
    # next script starts another): a harmless run afterwards leaves one alive to measure.
    await _run_all(sandboxed, [source for _n, source, _c in CORPUS])
    assert (await _run_all(sandboxed, ["return 1"]))[0] == (True, "", "1")
    before_sandbox, before_self = sandbox_rss(), psutil.Process().memory_info().rss
    slow_words = ("loop", "bomb", "infinite", "runaway")
    cheap = [(n, s, c) for n, s, c in CORPUS if not any(w in n for w in slow_words)]
    heavy = [(n, s, c) for n, s, c in CORPUS if (n, s, c) not in cheap]
    runs = [cheap[i % len(cheap)] if i % 20 else heavy[(i // 20) % len(heavy)] for i in range(1000)]
    results = await _run_all(sandboxed, [s for _n, s, _c in runs])
    assert all(not ok and code in codes for (ok, code, _m), (_n, _s, codes)
               in zip((results[i] for i in range(len(runs))), runs, strict=True))
    assert (await _run_all(sandboxed, ["return 2"]))[0] == (True, "", "2")  # one alive, as above
    after_sandbox, after_self = sandbox_rss(), psutil.Process().memory_info().rss
    print(f"sandbox worker RSS {before_sandbox / MiB:.1f} -> {after_sandbox / MiB:.1f} MiB; "
          f"test process RSS {before_self / MiB:.1f} -> {after_self / MiB:.1f} MiB")
    assert before_sandbox > 0 and after_sandbox > 0
    assert after_sandbox - before_sandbox < 150 * MiB
    assert after_self - before_self < 150 * MiB
