// The test panel: run the draft as it is (in the API process) from a chosen block, with a field
// per declared input and a contact id, or test one block with variables; the answer and trace
// are drawn by js/trace.js.
import { api, ApiError } from "../api.js";
import { button, field, h } from "../dom.js";
import { blocksOf } from "../graph.js";
import { showTestRun } from "../trace.js";
import { refusal } from "../pages/tools.js";
import { parseJson } from "./jsonView.js";

/** @typedef {{ store: import("./store.js").Store, rw: boolean, tool: {id: string|null} }} Env */

/** What was typed for a declared input, as the input's type reads it. */
export function typed(inp, raw) {
  if (inp.type === "number" && raw.trim() !== "" && !Number.isNaN(Number(raw))) return Number(raw);
  if (inp.type === "boolean" && (raw === "true" || raw === "false")) return raw === "true";
  if (inp.type === "json") { try { return JSON.parse(raw); } catch { return raw; } }
  return raw;
}

/** The selects of the block to start from and the block to test, following the definition. */
function blockChoices(store) {
  const startBlock = h("select", { name: "startBlock" });
  const oneBlock = h("select", { name: "block" });
  const render = () => {
    const ids = Object.keys(blocksOf(store.def));
    for (const [sel, first] of [[startBlock, store.def.onboardingBlockId], [oneBlock, null]]) {
      const keep = sel.value || first;
      sel.replaceChildren(...ids.map((id) => h("option", { value: id, selected: id === keep }, id)));
    }
  };
  store.subscribe((change) => { if (change.name !== "select") render(); });
  return { startBlock, oneBlock };
}

/** A field per declared input (so a run needs no JSON typed); what was typed survives redraws. */
function inputFields(store) {
  const box = h("div", { class: "test-inputs" });
  const values = new Map(); // name → what was typed
  const declared = () => (Array.isArray(store.def.inputs) ? store.def.inputs : []).filter((x) => x && x.name);
  store.subscribe((change) => {
    if (change.name === "select" || box.contains(document.activeElement)) return;
    box.replaceChildren(...declared().map((inp) => field(`Input ${inp.name}`,
      h("input", { type: "text", name: `input.${inp.name}`, value: values.get(inp.name) || "",
        oninput: (ev) => values.set(inp.name, ev.target.value) }),
      inp.type && inp.type !== "string" ? `A ${inp.type}${inp.type === "json" ? " (JSON)" : ""}.` : null)));
  });
  /** The fields over the JSON box's inputs: a field left empty is not sent. */
  const merged = (fromJson) => {
    const out = { ...fromJson };
    for (const inp of declared()) if (values.get(inp.name)) out[inp.name] = typed(inp, values.get(inp.name));
    return out;
  };
  return { box, merged };
}

/** @param {Env} env */
export function testPanel({ store, rw, tool }) {
  if (!rw) return null;
  const { startBlock, oneBlock } = blockChoices(store);
  const fields = inputFields(store);
  const inputs = h("textarea", { name: "inputs", class: "code", rows: 3, value: "{}" });
  const variables = h("textarea", { name: "variables", class: "code", rows: 3, value: "{}" });
  const contact = h("input", { type: "text", name: "contactId", autocomplete: "off" });
  const out = h("div", { class: "test-out", "aria-live": "polite" });
  const run = async (path, body) => {
    out.replaceChildren(h("p", {}, "Running…"));
    try {
      showTestRun(out, await api("POST", path, body), body);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.replaceChildren(refusal(err));
    }
  };
  const withJson = (area, what, fn) => () => {
    const [value, error] = parseJson(area.value, what);
    if (error) { out.replaceChildren(h("p", { class: "error", role: "alert" }, error)); return; }
    fn(value);
  };
  const flow = (v) => run("/tools/test-flow", { definition: store.def, ...(tool.id === null ? {} : { toolId: tool.id }),
    startBlockId: startBlock.value || null, inputs: fields.merged(v), ...(contact.value.trim() ? { contactId: contact.value.trim() } : {}) });
  const one = (v) => run("/tools/test-block", { block: blocksOf(store.def)[oneBlock.value] || {}, variables: v });
  return h("section", { class: "card", "aria-labelledby": "test-h" },
    h("h2", { id: "test-h" }, "Test"),
    h("div", { class: "cols" },
      h("div", {}, field("Start block", startBlock), fields.box, field("Inputs (JSON)", inputs, "Other inputs; the fields above win."),
        field("Contact id", contact, "The contact the run is kept under in the run history; empty: \"inline\"."),
        button("Run flow", withJson(inputs, "Inputs", flow))),
      h("div", {}, field("Block to test", oneBlock), field("Variables (JSON)", variables),
        button("Test block", withJson(variables, "Variables", one)))),
    out);
}
