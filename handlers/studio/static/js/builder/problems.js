// The builder's problems: the shape check's (POST /definitions/check, as you edit, and a
// refused save or publish) and the references' (js/graph.js, here), by block for the canvas's
// badges and by field for the form; and the panel that lists them, each a link to its place.
import { api, ApiError } from "../api.js";
import { h } from "../dom.js";
import { blockOfPath, references } from "../graph.js";

/**
 * @typedef {{ path: string, message: string, warning?: boolean }} Problem
 * @typedef {import("./store.js").Store} Store
 */

/** Messages by block id, for the canvas's badges. @param {Problem[]} list */
export function byBlock(list) {
  const out = new Map();
  for (const p of list) {
    const [b] = blockOfPath(p.path);
    if (b) out.set(b, [...(out.get(b) || []), `${p.path.split(".").slice(3).join(".") || "block"}: ${p.message}`]);
  }
  return out;
}

/**
 * The form's key of a problem path inside a block: a field's name, or a condition's
 * (outputConditions.0.target, outputConditions.0.rules.1.operator). @param {string} rest
 */
export function fieldKey(rest) {
  const cond = rest.match(/^outputConditions\.\d+\.(?:rules\.\d+\.\w+|target|id|logic)/);
  return cond ? cond[0] : rest.split(".")[0];
}

/** Messages by the form's key, for block `blockId`. @param {Problem[]} list @param {string|null} blockId */
export function byField(list, blockId) {
  const out = new Map();
  for (const p of list) {
    const [b] = blockOfPath(p.path);
    if (b !== blockId) continue;
    const key = fieldKey(String(p.path).split(".").slice(3).join("."));
    out.set(key, [...(out.get(key) || []), p.message]);
  }
  return out;
}

/** The problems of the store's definition; `check()` asks the API for the shape check's. @param {Store} store */
export function createProblems(store) {
  /** @type {Problem[]} */
  let server = [];
  let seq = 0;
  const listeners = new Set();
  const emit = () => { for (const fn of [...listeners]) fn(); };
  function all() {
    const refs = references(store.def);
    // The shape check names some broken targets itself (…defaultOutput.blockId): one report each.
    const mine = refs.problems.filter((p) => !server.some((s) => String(s.path).startsWith(`${p.path}.`)));
    return { problems: [...server, ...mine], warnings: refs.warnings };
  }
  async function check() {
    const mine = ++seq;
    try {
      const res = await api("POST", "/definitions/check", store.def);
      if (mine !== seq) return;
      server = res.problems;
    } catch (err) {
      if (mine !== seq || !(err instanceof ApiError)) return;
      server = err.problems.length ? err.problems : [{ path: "$", message: err.message }];
    }
    emit(); // this very definition's (a newer edit would have a newer seq)
  }
  return {
    all,
    byBlock: () => byBlock(all().problems),
    /** @param {string|null} blockId */
    byField: (blockId) => byField(all().problems, blockId),
    /** Problems from elsewhere (a refused publish, a JSON view that does not parse). @param {Problem[]} list */
    set(list) { server = list; seq += 1; emit(); },
    check,
    /** Called after each new answer. @param {() => void} fn */
    subscribe(fn) { listeners.add(fn); },
  };
}

/** @typedef {ReturnType<typeof createProblems>} Problems */

/**
 * The list of problems and warnings, each a button that goes to its place (`jump(path)`).
 * @param {{ store: Store, problems: Problems, jump: (path: string) => void }} env
 */
export function problemsPanel({ store, problems, jump }) {
  const problemList = h("ul", { class: "problems", "aria-label": "Problems" });
  const warningList = h("ul", { class: "warnings", "aria-label": "Warnings" });
  const box = h("section", { class: "problems-box", "aria-labelledby": "problems-h" },
    h("h2", { id: "problems-h" }, "Problems"), problemList, warningList);
  /** @param {Problem} p */
  const item = (p) => h("li", { class: p.warning ? "warn" : "" },
    h("button", { type: "button", class: "link", onclick: () => jump(p.path) }, h("code", {}, p.path)), " ", h("span", {}, p.message));
  function render() {
    const { problems: list, warnings } = problems.all();
    problemList.replaceChildren(...list.map(item));
    warningList.replaceChildren(...warnings.map(item));
    box.classList.toggle("none", list.length === 0);
    if (!list.length) problemList.replaceChildren(h("li", { class: "ok" }, "No problems found."));
  }
  store.subscribe((change) => { if (change.name !== "select") render(); });
  problems.subscribe(render);
  return box;
}
