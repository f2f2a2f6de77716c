"""JavaScript evaluated once in every fresh V8 context: hardening plus the batch runner.

The prelude

1. removes host-ish and cross-job channels from the global object (WebAssembly,
   SharedArrayBuffer/Atomics, WeakRef/FinalizationRegistry, eval, the mini-racer
   setTimeout shim, RegExp legacy statics) and replaces every Function constructor with a
   thrower, so no code can be generated from strings by user scripts;
2. makes the usual overridable prototype properties (``constructor``, ``toString``,
   ``name``, ``message``...) accessors, so ``this.name = ...`` in an Error subclass still
   works once the prototypes are frozen (the "override mistake");
3. deep-freezes every intrinsic reachable from ``globalThis`` plus the hidden ones
   (iterator/generator/async prototypes, %TypedArray%, ...) and ``globalThis`` itself;
4. binds the runner to a script-scope ``const`` with an unguessable name: it is not a
   property of ``globalThis`` and cannot be enumerated, so user code cannot reach it.

The runner compiles each distinct (source, bare names) pair once with the captured
``Function`` constructor (which parses the body on its own: no ``})`` break-out) in strict
mode, then runs a JSON batch of jobs and returns one JSON array of outcomes.
"""

from __future__ import annotations

PRELUDE_TEMPLATE = r"""
"use strict";
const __RUNNER__ = (() => {
  const G = globalThis;
  const F = Function;
  const { freeze, getPrototypeOf, getOwnPropertyDescriptor, defineProperty } = Object;
  const ownKeys = Reflect.ownKeys;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const now = Date.now;
  const errToString = Error.prototype.toString;
  const PromiseCtor = Promise;

  // 1. remove channels to the host, code generation and cross-job state.
  for (const k of ["WebAssembly", "SharedArrayBuffer", "Atomics", "WeakRef",
                   "FinalizationRegistry", "eval"]) {
    Reflect.deleteProperty(G, k);
  }
  for (const k of ["setTimeout", "clearTimeout", "__timer_manager"]) {
    if (k in G && !Reflect.deleteProperty(G, k)) G[k] = undefined;
  }
  for (const k of ["$_", "$&", "$+", "$`", "$'", "$1", "$2", "$3", "$4", "$5", "$6", "$7",
                   "$8", "$9", "input", "lastMatch", "lastParen", "leftContext",
                   "rightContext"]) {
    Reflect.deleteProperty(RegExp, k);
  }
  const noop = () => undefined;
  G.console = { log: noop, info: noop, warn: noop, error: noop, debug: noop, trace: noop };
  const tameCtor = (proto, name) => {
    const thrower = function () {
      throw new EvalError(name + " constructor is disabled in scripts");
    };
    defineProperty(thrower, "name", { value: name });
    thrower.prototype = proto;
    defineProperty(proto, "constructor", { value: thrower });
    return thrower;
  };
  G.Function = tameCtor(F.prototype, "Function");
  tameCtor(getPrototypeOf(async function () {}), "AsyncFunction");
  tameCtor(getPrototypeOf(function* () {}), "GeneratorFunction");
  tameCtor(getPrototypeOf(async function* () {}), "AsyncGeneratorFunction");

  // 2. keep assignment-overriding of common prototype properties working once frozen.
  const enableOverride = (proto, key) => {
    const d = getOwnPropertyDescriptor(proto, key);
    if (!d || !("value" in d) || !d.writable || !d.configurable) return;
    const value = d.value;
    defineProperty(proto, key, {
      get() { return value; },
      set(v) {
        if (this === proto) throw new TypeError("Cannot assign to read only property '"
                                                + String(key) + "' of shared prototype");
        defineProperty(this, key, { value: v, writable: true, enumerable: true,
                                    configurable: true });
      },
      enumerable: d.enumerable,
      configurable: false,
    });
  };
  for (const k of ["constructor", "toString", "valueOf", "toLocaleString"]) {
    enableOverride(Object.prototype, k);
  }
  enableOverride(F.prototype, "toString");
  for (const E of [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError,
                   URIError, AggregateError]) {
    for (const k of ["constructor", "name", "message", "toString"]) {
      enableOverride(E.prototype, k);
    }
  }

  // 3. deep-freeze everything shared.
  const hidden = [
    getPrototypeOf(async function () {}), getPrototypeOf(function* () {}),
    getPrototypeOf(async function* () {}), getPrototypeOf((function* () {})()),
    getPrototypeOf((async function* () {})()), [][Symbol.iterator](),
    new Map()[Symbol.iterator](), new Set()[Symbol.iterator](), ""[Symbol.iterator](),
    "a".matchAll(/a/g), getPrototypeOf(Int8Array), (async () => {})(),
  ];
  if (typeof Iterator === "function") {
    hidden.push([].values().map((x) => x));
    hidden.push(Iterator.from({ next() { return { done: true, value: undefined }; } }));
  }
  if (typeof Intl === "object" && Intl.Segmenter) {
    const segments = new Intl.Segmenter().segment("a");
    hidden.push(segments, segments[Symbol.iterator]());
  }
  const seen = new Set();
  const stack = [G, ...hidden];
  while (stack.length) {
    const o = stack.pop();
    if ((typeof o !== "object" && typeof o !== "function") || o === null || seen.has(o)) {
      continue;
    }
    seen.add(o);
    freeze(o);
    stack.push(getPrototypeOf(o));
    for (const k of ownKeys(o)) {
      const d = getOwnPropertyDescriptor(o, k);
      if (d) stack.push(d.value, d.get, d.set);
    }
  }

  // 4. the runner (reachable only through the unguessable script-scope binding).
  const cache = new Map();
  const state = { seq: -1, parts: [], cur: -1, t0: 0 };
  const describe = (e) => {
    try {
      if (e instanceof Error) return errToString.call(e);
      return "Uncaught " + String(e);
    } catch (_) {
      return "script threw a value that cannot be printed";
    }
  };
  const fail = (code, msg) => stringify([1, code, msg]);
  // V8 refuses allocations past its size limits with these catchable RangeErrors; they are
  // memory bombs stopped early, so they are reported as such.
  const SIZE_LIMIT =
    /^(Invalid (string|array|typed array|array buffer) length|Array buffer allocation failed)/;
  const sizeLimit = (e) => {
    try {
      return e instanceof RangeError && SIZE_LIMIT.test(e.message);
    } catch (_) {
      return false;
    }
  };
  const thrown = (e) => fail(sizeLimit(e) ? "script_memory" : "script_error", describe(e));
  const replacer = (k, v) => {
    const t = typeof v;
    if (t === "function" || t === "symbol" || t === "bigint") throw { __cfKind: t };
    return v;
  };
  const encode = (v) => {
    if (v === undefined) return "[0,null]";
    if (v instanceof PromiseCtor || (v !== null && typeof v === "object"
                                     && typeof v.then === "function")) {
      return fail("script_result", "script result is not JSON-serialisable: Promise " +
                  "(asynchronous results are not supported)");
    }
    let text;
    try {
      text = stringify(v, replacer);
    } catch (e) {
      if (e !== null && typeof e === "object" && typeof e.__cfKind === "string") {
        return fail("script_result", "script result is not JSON-serialisable: " + e.__cfKind);
      }
      if (e instanceof TypeError && /circular/i.test(e.message)) {
        return fail("script_result", "script result is not JSON-serialisable: cyclic structure");
      }
      return thrown(e);
    }
    return "[0," + text + "]";
  };
  const compile = (id, src, names) => {
    try {
      cache.set(id, { fn: new F("input", ...names, "'use strict';" + src), names });
    } catch (e) {
      cache.set(id, { err: describe(e), syntax: e instanceof SyntaxError });
    }
  };
  const runOne = (job) => {
    const entry = cache.get(job[0]);
    if (!entry) return fail("script_error", "internal: script not compiled");
    if (!entry.fn) return fail(entry.syntax ? "script_syntax" : "script_error", entry.err);
    const input = job[2];
    const args = [input];
    for (const n of entry.names) args.push(input[n]);
    let out;
    try {
      out = encode(entry.fn.apply(undefined, args));
    } catch (e) {
      out = thrown(e);
    }
    if (now() - state.t0 > job[1]) {
      return fail("script_timeout", "script timeout (>" + job[1] + "ms)");
    }
    return out;
  };
  return freeze({
    run(seq, payload) {
      state.seq = seq;
      const parts = [];
      state.parts = parts;
      state.cur = -1;
      state.t0 = now();
      const p = parse(payload);
      for (const id of p.e) cache.delete(id);
      for (const c of p.c) compile(c[0], c[1], c[2]);
      const jobs = p.j;
      for (let i = 0; i < jobs.length; i++) {
        state.cur = i;
        state.t0 = now();
        parts.push(runOne(jobs[i]));
      }
      state.cur = -1;
      return "[" + parts.join(",") + "]";
    },
    progress() {
      return '{"seq":' + state.seq + ',"cur":' + state.cur + ',"elapsed":' +
             (now() - state.t0) + ',"parts":[' +
             state.parts.join(",") + "]}";
    },
  });
})();
"ok";
"""


def prelude(runner_name: str) -> str:
    """Return the prelude source binding the runner to ``runner_name``."""
    return PRELUDE_TEMPLATE.replace("__RUNNER__", runner_name)
