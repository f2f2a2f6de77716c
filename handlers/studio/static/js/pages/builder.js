// The builder: name and description, the definition as an editable JSON document with the
// API's problems beside it, the drawing (redrawn as the document changes), the agents
// configuration panel, publish, the test panel and the seven-day chart.
import { api, ApiError } from "../api.js";
import { chart } from "../chart.js";
import { button, clear, field, h, json, s } from "../dom.js";
import { draw } from "../flow.js";
import { outcome, timeline } from "../timeline.js";
import { refusal } from "./tools.js";

const enc = encodeURIComponent;

/** Index in the JSON text of the key a problem path names (definition.blocks.b1.url). */
export function locate(text, path) {
  let at = 0;
  for (const seg of String(path).split(".").filter((x) => x && x !== "definition" && x !== "$")) {
    if (/^\d+$/.test(seg)) continue;
    const i = text.indexOf(`"${seg}"`, at);
    if (i < 0) break;
    at = i;
  }
  return at;
}

function parseJson(text, what) {
  try { return [JSON.parse(text || "{}"), null]; } catch (err) { return [null, `${what}: ${err.message}`]; }
}

export async function builderPage(ctx, toolId) {
  const tool = await api("GET", `/tools/${enc(toolId)}`);
  const rw = ctx.canWrite;
  let def = tool.definition || { blocks: {}, onboardingBlockId: null };
  let problems = [];
  let checkSeq = 0;

  const name = h("input", { type: "text", name: "name", value: tool.name || "", readonly: !rw });
  const description = h("textarea", { name: "description", rows: 2, value: tool.description || "", readonly: !rw });
  const doc = h("textarea", { name: "definition", class: "code", rows: 24, spellcheck: "false", value: json(def), readonly: !rw });
  const problemList = h("ul", { class: "problems", "aria-label": "Problems" });
  const problemsBox = h("section", { class: "problems-box", "aria-labelledby": "problems-h" },
    h("h2", { id: "problems-h" }, "Problems"), problemList);
  const svg = s("svg", { class: "flow", role: "group", "aria-label": "Flow drawing" });
  const publishOut = h("div", { "aria-live": "polite" });
  const state = h("p", { class: "muted" });
  const heading = h("h1", { id: "tool-h" }, tool.name);

  function showState(t) {
    const pub = t.publishedTool || null;
    state.textContent = `${t.status || (pub ? "published" : "draft")}${pub ? ` · published as ${pub.id}` : ""}`
      + `${t.version !== undefined ? ` · version ${t.version}` : ""}`;
  }
  showState(tool);

  function renderProblems() {
    problemList.replaceChildren(...problems.map((p) => h("li", {},
      h("button", { type: "button", class: "link", onclick: () => {
        const i = locate(doc.value, p.path);
        doc.focus();
        doc.setSelectionRange(i, i + String(p.path).split(".").pop().length + 2);
      } }, h("code", {}, p.path)),
      " ", h("span", {}, p.message))));
    problemsBox.classList.toggle("none", problems.length === 0);
    if (!problems.length) problemList.replaceChildren(h("li", { class: "ok" }, "No problems found."));
  }

  // Agents configuration: visible only while enabledForAI is on (seed: "Configuração para agentes").
  const aiToggle = h("input", { type: "checkbox", name: "enabledForAI", checked: !!def.enabledForAI, disabled: !rw });
  const agents = h("fieldset", { class: "agents" });
  function renderAgents() {
    aiToggle.checked = !!def.enabledForAI;
    if (!def.enabledForAI) { agents.hidden = true; agents.replaceChildren(); return; }
    if (agents.contains(document.activeElement)) return;
    agents.hidden = false;
    const edit = (key) => (ev) => { def[key] = ev.target.value || undefined; syncDoc(); };
    const inputs = Array.isArray(def.inputs) ? def.inputs : [];
    clear(agents,
      h("legend", {}, "Agents configuration"),
      field("Slug", h("input", { type: "text", name: "slug", value: def.slug || "", readonly: !rw, oninput: edit("slug") }),
        "The function name agents call: letters, digits, _ and -, up to 64."),
      field("Description for agents", h("textarea", { name: "aiDescription", rows: 2, value: def.description || "", readonly: !rw, oninput: edit("description") }),
        "Sent to the LLM; empty means the tool's description."),
      field("Return description", h("textarea", { name: "returnDescription", rows: 2, value: def.returnDescription || "", readonly: !rw, oninput: edit("returnDescription") })),
      inputs.map((inp, i) => field(`Description of input ${inp && inp.name}`,
        h("input", { type: "text", value: (inp && inp.description) || "", readonly: !rw,
          oninput: (ev) => { def.inputs[i].description = ev.target.value || undefined; syncDoc(); } }))));
  }
  aiToggle.addEventListener("change", () => { def.enabledForAI = aiToggle.checked; syncDoc(); });

  // The test panel's block choices follow the document.
  const startBlock = h("select", { name: "startBlock" });
  const oneBlock = h("select", { name: "block" });
  function renderChoices() {
    const ids = Object.keys((def && def.blocks) || {});
    for (const [sel, first] of [[startBlock, def.onboardingBlockId], [oneBlock, null]]) {
      const keep = sel.value || first;
      sel.replaceChildren(...ids.map((id) => h("option", { value: id, selected: id === keep }, id)));
    }
  }

  async function check() {
    const seq = ++checkSeq;
    try {
      const res = await api("POST", "/definitions/check", def);
      if (seq !== checkSeq) return;
      problems = res.problems;
    } catch (err) {
      if (seq !== checkSeq || !(err instanceof ApiError)) return;
      problems = err.problems.length ? err.problems : [{ path: "$", message: err.message }];
    }
    renderProblems();
    draw(svg, def, problems);
  }

  function update() {
    const [parsed, error] = parseJson(doc.value, "JSON");
    if (error || typeof parsed !== "object" || Array.isArray(parsed) || parsed === null) {
      problems = [{ path: "$", message: error || "the definition must be a JSON object" }];
      renderProblems();
      return;
    }
    def = parsed;
    draw(svg, def, problems);
    renderAgents();
    renderChoices();
    if (rw) check(); // the check is for whoever can edit; a viewer reads the drawing
  }
  function syncDoc() { doc.value = json(def); update(); }
  let timer = null;
  doc.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(update, 250); });
  ctx.onLeave(() => clearTimeout(timer));

  async function save() {
    const [parsed, error] = parseJson(doc.value, "JSON");
    if (error) throw new ApiError(400, { message: error, problems: [{ path: "$", message: error }] });
    const saved = await api("PATCH", `/tools/${enc(toolId)}`, { name: name.value, description: description.value || null, definition: parsed });
    showState(saved);
    heading.textContent = saved.name;
    return saved;
  }
  async function act(fn, done) {
    publishOut.replaceChildren();
    try { const r = await fn(); publishOut.replaceChildren(h("p", { class: "ok", role: "status" }, done(r))); }
    catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (err.problems.length) { problems = err.problems; renderProblems(); draw(svg, def, problems); }
      publishOut.replaceChildren(refusal(err));
    }
  }
  const actions = rw ? h("div", { class: "actions" },
    button("Save draft", () => act(save, () => "Draft saved.")),
    button("Publish", () => act(async () => { await save(); return api("POST", `/tools/${enc(toolId)}/publish`); },
      (t) => { showState(t); return `Published as ${t.publishedTool ? t.publishedTool.id : t.publishedToolId}.`; }), { class: "primary" }),
    button("Move to trash", () => act(async () => { await api("DELETE", `/tools/${enc(toolId)}`); ctx.go("#/trash"); }, () => "Moved to the trash."),
      { class: "danger" })) : null;

  // Test panel (runs the draft as typed, in the API process).
  let testPanel = null;
  if (rw) {
    const inputs = h("textarea", { name: "inputs", class: "code", rows: 3, value: "{}" });
    const variables = h("textarea", { name: "variables", class: "code", rows: 3, value: "{}" });
    const out = h("div", { class: "test-out", "aria-live": "polite" });
    const run = async (path, body) => {
      out.replaceChildren(h("p", {}, "Running…"));
      try {
        const res = await api("POST", path, body);
        out.replaceChildren(outcome(res), timeline(res.trace || [], "Test trace"));
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
    testPanel = h("section", { class: "card", "aria-labelledby": "test-h" },
      h("h2", { id: "test-h" }, "Test"),
      h("div", { class: "cols" },
        h("div", {}, field("Start block", startBlock), field("Inputs (JSON)", inputs),
          button("Run flow", withJson(inputs, "Inputs", (v) => run("/tools/test-flow", { definition: def, startBlockId: startBlock.value || null, inputs: v })))),
        h("div", {}, field("Block to test", oneBlock), field("Variables (JSON)", variables),
          button("Test block", withJson(variables, "Variables", (v) => run("/tools/test-block", { block: (def.blocks || {})[oneBlock.value] || {}, variables: v }))))),
      out);
  }

  let days = null;
  try { days = (await api("GET", `/tools/${enc(toolId)}/daily`)).days; } catch { days = null; }

  const page = h("article", { "aria-labelledby": "tool-h" },
    h("div", { class: "bar" }, heading, actions),
    state, publishOut,
    h("section", { class: "card", "aria-label": "Name and description" },
      field("Name", name), field("Description", description)),
    h("div", { class: "editor" },
      h("section", { "aria-labelledby": "def-h" }, h("h2", { id: "def-h" }, "Definition"),
        field("Definition (JSON)", doc, rw ? "Edit the JSON; problems and the drawing follow as you type."
          : "Read-only: a viewer key cannot change tools.")),
      h("div", { class: "side" }, rw ? problemsBox : null,
        h("section", { "aria-labelledby": "ai-h" }, h("h2", { id: "ai-h" }, "AI agents"),
          rw ? h("div", { class: "check" }, aiToggle, h("label", { for: aiToggle.id || (aiToggle.id = "enabled-ai") }, "Enabled for AI agents"))
            : h("p", {}, def.enabledForAI ? "Enabled for AI agents." : "Not enabled for AI agents."),
          agents))),
    h("section", { "aria-labelledby": "draw-h" }, h("h2", { id: "draw-h" }, "Flow"),
      h("div", { class: "drawing" }, svg)),
    testPanel,
    days ? h("section", { "aria-labelledby": "days-h" }, h("h2", { id: "days-h" }, "Last seven days"), chart(days)) : null);
  update();
  return page;
}
