// The builder's side panels beside the JSON: the declared inputs, and the AI agents
// configuration (shown only while "Enabled for AI agents" is on). Each draws itself from the
// store and edits it through its actions; neither redraws while it has the focus.
import { button, clear, field, h } from "../dom.js";

/** @typedef {{ store: import("./store.js").Store, rw: boolean }} Env */

const declared = (def) => (Array.isArray(def.inputs) ? def.inputs : []);

/** One declared input's name, type and Remove. */
function inputRow(env, inp, i) {
  const { store, rw } = env;
  const put = (change) => store.dispatch("inputs", { change });
  return h("li", {},
    h("input", { type: "text", name: "inputName", value: (inp && inp.name) || "", readonly: !rw, "aria-label": `Name of input ${i + 1}`,
      onchange: (ev) => put((xs) => { xs[i].name = ev.target.value; }) }),
    h("select", { name: "inputType", disabled: !rw, "aria-label": `Type of input ${i + 1}`, onchange: (ev) => put((xs) => { xs[i].type = ev.target.value; }) },
      ["string", "number", "boolean", "json"].map((t) => h("option", { value: t, selected: (inp && inp.type) === t }, t))),
    rw ? button("Remove", () => put((xs) => { xs.splice(i, 1); }), { "aria-label": `Remove input ${inp && inp.name}` }) : null);
}

/** The tool's declared inputs: each one's name and type, and a field to add one. @param {Env} env */
export function inputsPanel(env) {
  const { store, rw } = env;
  const box = h("div", { class: "inputs-box" });
  const onNew = (ev) => {
    if (ev.key !== "Enter" || !ev.target.value.trim()) return;
    ev.preventDefault();
    const n = ev.target.value.trim();
    ev.target.blur();
    store.dispatch("inputs", { change: (xs) => { xs.push({ name: n, type: "string" }); } });
    box.querySelector("[name=newInput]").focus();
  };
  function render() {
    const inputs = declared(store.def);
    clear(box, inputs.length ? h("ul", { class: "inputs-list" }, inputs.map((inp, i) => inputRow(env, inp, i)))
      : h("p", { class: "muted" }, "No inputs declared."),
    rw ? field("New input name", h("input", { type: "text", name: "newInput", onkeydown: onNew }),
      "Press Enter to add it; blocks read it as {{name}}.") : null);
  }
  store.subscribe((change) => { if (change.name !== "select" && !box.contains(document.activeElement)) render(); });
  return h("section", { "aria-labelledby": "inputs-h" }, h("h2", { id: "inputs-h" }, "Inputs"), box);
}

/** The fields agents read: slug, descriptions, and one per declared input. @param {Env} env */
function agentFields({ store, rw }) {
  const def = store.def;
  const put = (key) => (ev) => store.dispatch("setProperty", { key, value: ev.target.value || undefined }, { key: `agents.${key}` });
  return [h("legend", {}, "Agents configuration"),
    field("Slug", h("input", { type: "text", name: "slug", value: def.slug || "", readonly: !rw, oninput: put("slug") }),
      "The function name agents call: letters, digits, _ and -, up to 64."),
    field("Description for agents", h("textarea", { name: "aiDescription", rows: 2, value: def.description || "", readonly: !rw, oninput: put("description") }),
      "Sent to the LLM; empty means the tool's description."),
    field("Return description", h("textarea", { name: "returnDescription", rows: 2, value: def.returnDescription || "", readonly: !rw, oninput: put("returnDescription") })),
    declared(def).map((inp, i) => field(`Description of input ${inp && inp.name}`,
      h("input", { type: "text", value: (inp && inp.description) || "", readonly: !rw,
        oninput: (ev) => store.dispatch("inputs", { change: (xs) => { xs[i].description = ev.target.value || undefined; } },
          { key: `agents.input.${i}` }) })))];
}

/** "Enabled for AI agents", and while it is on, the agents configuration. @param {Env} env */
export function agentsPanel(env) {
  const { store, rw } = env;
  const toggle = h("input", { type: "checkbox", name: "enabledForAI", id: "enabled-ai", checked: !!store.def.enabledForAI, disabled: !rw });
  toggle.addEventListener("change", () => store.dispatch("setProperty", { key: "enabledForAI", value: toggle.checked }));
  const agents = h("fieldset", { class: "agents" });
  function render() {
    toggle.checked = !!store.def.enabledForAI;
    if (!store.def.enabledForAI) { agents.hidden = true; agents.replaceChildren(); return; }
    if (agents.contains(document.activeElement)) return;
    agents.hidden = false;
    clear(agents, agentFields(env));
  }
  store.subscribe((change) => { if (change.name !== "select") render(); });
  return h("section", { "aria-labelledby": "ai-h" }, h("h2", { id: "ai-h" }, "AI agents"),
    rw ? h("div", { class: "check" }, toggle, h("label", { for: "enabled-ai" }, "Enabled for AI agents"))
      : h("p", {}, store.def.enabledForAI ? "Enabled for AI agents." : "Not enabled for AI agents."),
    agents);
}
