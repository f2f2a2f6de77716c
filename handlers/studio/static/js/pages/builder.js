// The builder: the canvas (js/canvas.js) with a palette, the selected block's form made from
// the validation schema (js/forms.js), and the definition as JSON; the three stay in sync both
// ways. Problems show as badges on nodes and highlighted fields; undo/redo covers every edit.
// Also: name and description, the agents configuration, save/publish/trash, the test panel and
// the seven-day chart. A tool made by "New tool" exists only from its first save.
import { api, ApiError } from "../api.js";
import { casesPanel, gateFailures } from "../cases.js";
import { createCanvas, NODE_W, positionsOf, autoLayout } from "../canvas.js";
import { chart } from "../chart.js";
import { confirmDialog } from "../dialog.js";
import { button, clear, field, h, json } from "../dom.js";
import { blockForm, newBlock } from "../forms.js";
import { blockOfPath, blocksOf, exitsOf, references, TYPES } from "../graph.js";
import { history as makeHistory } from "../history.js";
import { showTestRun } from "../trace.js";
import { versionsPanel } from "../versions.js";
import { recentRuns, refusal } from "./tools.js";

const enc = encodeURIComponent;
const TYPE_NAMES = { httpCall: "HTTP call", executeScript: "Script", callEndpoint: "Call endpoint", callTool: "Call tool",
  fetchMedia: "Fetch media", callAI: "Call AI", return: "Return" };
let schemaCache = null;

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

async function optional(promise, fallback) { try { return await promise; } catch { return fallback; } }

export async function builderPage(ctx, toolId, newName) {
  const isNew = toolId === null;
  const tool = isNew ? { name: newName || "Untitled tool", description: "", definition: { onboardingBlockId: null, blocks: {} } }
    : await api("GET", `/tools/${enc(toolId)}`);
  const rw = ctx.canWrite;
  schemaCache = schemaCache || await api("GET", "/definitions/schema");
  const schemas = schemaCache;
  const [tools, servers, creds] = await Promise.all([optional(api("GET", "/tools"), []),
    optional(api("GET", "/integration-servers"), []), optional(api("GET", "/llm-credentials"), [])]);
  const lookups = { tools: tools.filter((t) => t.id !== toolId), servers, creds };

  let def = tool.definition && typeof tool.definition === "object" ? tool.definition : { blocks: {}, onboardingBlockId: null };
  if (!def.blocks) def.blocks = {};
  const hist = makeHistory(json(def));
  let selected = null;
  let serverProblems = [];
  let checkSeq = 0;
  let savedAs = null;

  const name = h("input", { type: "text", name: "name", value: tool.name || "", readonly: !rw });
  const description = h("textarea", { name: "description", rows: 2, value: tool.description || "", readonly: !rw });
  const snapshot = () => JSON.stringify([name.value, description.value, def]);
  savedAs = isNew ? null : snapshot();
  const dirty = () => rw && snapshot() !== savedAs;

  const doc = h("textarea", { name: "definition", class: "code", rows: 20, spellcheck: "false", value: json(def), readonly: !rw });
  const problemList = h("ul", { class: "problems", "aria-label": "Problems" });
  const warningList = h("ul", { class: "warnings", "aria-label": "Warnings" });
  const problemsBox = h("section", { class: "problems-box", "aria-labelledby": "problems-h" },
    h("h2", { id: "problems-h" }, "Problems"), problemList, warningList);
  const canvasBox = h("div", { class: "canvas", role: "group", "aria-label": "Flow canvas" });
  const inspector = h("div", { class: "inspector", "aria-live": "off" });
  const publishOut = h("div", { "aria-live": "polite" });
  const state = h("p", { class: "muted" });
  const heading = h("h1", { id: "tool-h" }, tool.name);
  const saveBtn = rw ? button(isNew ? "Save" : "Save draft", () => act(save, () => "Draft saved.")) : null;

  function showState(t) {
    if (!t) { state.textContent = "new · not saved yet"; return; }
    const pub = t.publishedTool || null;
    // The live version's number (a save bumps only the draft's revision, not this).
    const live = t.publishedVersion ?? (pub ? pub.version : undefined);
    state.textContent = `${t.status || (pub ? "published" : "draft")}${pub ? ` · published as ${pub.id}` : ""}`
      + `${live !== undefined && live !== null ? ` · version ${live}` : ""}`;
  }
  showState(isNew ? null : tool);

  // -- problems: the shape check's (server) and the references' (here) ------------------------
  function allProblems() {
    const refs = references(def);
    // The shape check names some broken targets itself (…defaultOutput.blockId): one report each.
    const mine = refs.problems.filter((p) => !serverProblems.some((s) => String(s.path).startsWith(`${p.path}.`)));
    return { problems: [...serverProblems, ...mine], warnings: refs.warnings };
  }
  function byBlock(list) {
    const out = new Map();
    for (const p of list) {
      const [b] = blockOfPath(p.path);
      if (b) out.set(b, [...(out.get(b) || []), `${p.path.split(".").slice(3).join(".") || "block"}: ${p.message}`]);
    }
    return out;
  }
  function byField(list, blockId) {
    const out = new Map();
    for (const p of list) {
      const [b] = blockOfPath(p.path);
      if (b !== blockId) continue;
      const rest = String(p.path).split(".").slice(3).join(".");
      const key = /^outputConditions\.\d+\.(target|id|logic)|^outputConditions\.\d+\.rules\.\d+\.\w+/.test(rest)
        ? rest.match(/^outputConditions\.\d+\.(?:rules\.\d+\.\w+|\w+)/)[0] : rest.split(".")[0];
      out.set(key, [...(out.get(key) || []), p.message]);
    }
    return out;
  }
  function renderProblems() {
    const { problems, warnings } = allProblems();
    const item = (p) => h("li", { class: p.warning ? "warn" : "" },
      h("button", { type: "button", class: "link", onclick: () => jumpTo(p.path) }, h("code", {}, p.path)), " ", h("span", {}, p.message));
    problemList.replaceChildren(...problems.map(item));
    warningList.replaceChildren(...warnings.map(item));
    problemsBox.classList.toggle("none", problems.length === 0);
    if (!problems.length) problemList.replaceChildren(h("li", { class: "ok" }, "No problems found."));
  }
  function jumpTo(path) {
    const [b, f] = blockOfPath(path);
    if (b && b in blocksOf(def)) {
      select(b);
      const control = f && inspector.querySelector(`[name="${CSS.escape(f)}"]`);
      (control || inspector.querySelector("input, select, textarea") || inspector).focus();
      return;
    }
    const i = locate(doc.value, path);
    doc.focus();
    doc.setSelectionRange(i, i + String(path).split(".").pop().length + 2);
  }

  // -- the views ----------------------------------------------------------------------------
  let pending = [];
  const canvas = createCanvas(canvasBox, {
    editable: rw,
    onSelect: (id) => select(id),
    // Drawflow reports one gesture as several events (deleting a node also removes its
    // connections); they are applied together, after its handler returns, as one edit.
    onConnect: (from, port, target) => queue((d) => setTarget(d, from, port, target)),
    onDisconnect: (from, port) => queue((d) => setTarget(d, from, port, undefined), "edge"),
    onMove: (id, at) => queue((d) => { d.meta = { ...(d.meta || {}), positions: { ...positionsOf(def), ...((d.meta || {}).positions || {}), [id]: at } }; }),
    onDelete: (id) => queue((d) => removeBlock(d, id), "node"),
  });
  function queue(fn, kind) {
    pending.push([fn, kind]);
    if (pending.length > 1) return;
    queueMicrotask(() => {
      const batch = pending;
      pending = [];
      const deleting = batch.some(([, k]) => k === "node");
      edit((d) => { for (const [f, k] of batch) if (!(deleting && k === "edge")) f(d); }, { form: true });
    });
  }
  function setTarget(d, from, port, target) {
    const b = d.blocks[from];
    if (!b) return;
    if (port === 0) { if (target) b.defaultOutput = target; else delete b.defaultOutput; }
    else if (b.outputConditions && b.outputConditions[port - 1]) b.outputConditions[port - 1].target = target;
  }
  function removeBlock(d, id) {
    delete d.blocks[id];
    if (d.onboardingBlockId === id) d.onboardingBlockId = Object.keys(d.blocks)[0] || null;
    if (d.meta && d.meta.positions) delete d.meta.positions[id];
    if (selected === id) selected = null;
  }

  function formCtx() {
    const { problems } = allProblems();
    return {
      def, schemas, lookups, readonly: !rw, problems: byField(problems, selected),
      set: (blockId, key, value, opts = {}) => edit((d) => {
        if (value === undefined) delete d.blocks[blockId][key]; else d.blocks[blockId][key] = value;
      }, { key: opts.coalesce ? `${blockId}.${key}` : null }),
      edit: (fn, opts = {}) => edit(fn, { form: !!opts.form, key: typeof opts.coalesce === "string" ? opts.coalesce : null }),
      rename: (from, to) => rename(from, to),
      inputsOf: async (id) => {
        const t = await optional(api("GET", `/tools/${enc(id)}`), null);
        const d = t && ((t.publishedTool && t.publishedTool.definition) || t.definition);
        return (d && Array.isArray(d.inputs) ? d.inputs : []).filter((x) => x && x.name);
      },
    };
  }
  function renderForm() {
    if (!selected || !(selected in blocksOf(def))) {
      selected = null;
      clear(inspector, h("h2", {}, "Block"), h("p", { class: "muted" },
        rw ? "Add a block from the palette, or select one on the canvas (click it, or Tab to it and press Enter)."
          : "Select a block on the canvas to read its fields."));
      return;
    }
    const b = blocksOf(def)[selected];
    clear(inspector, h("h2", { id: "block-h" }, `Block ${selected} (${b.type})`), blockForm(formCtx(), selected),
      rw ? button("Delete block", () => edit((d) => removeBlock(d, selected), { form: true }), { class: "danger", "aria-label": `Delete block ${selected}` }) : null);
  }
  function markCanvas() {
    canvas.mark({ problems: byBlock(allProblems().problems), selected });
  }
  function select(id) {
    selected = id;
    renderForm();
    markCanvas(); // the chosen node stands out, drawn where it is
    const first = inspector.querySelector("input:not([readonly]), select, textarea");
    if (first && rw) first.focus({ preventScroll: false });
  }
  function drawCanvas() {
    const { problems } = allProblems();
    canvas.render(def, { problems: byBlock(problems), selected });
  }

  /** Everything that follows a change of `def`. */
  function refresh({ from = null, form = false } = {}) {
    if (from !== "json") doc.value = json(def);
    drawCanvas();
    renderProblems();
    renderAgents();
    renderChoices();
    renderTestInputs();
    if (!inputsBox.contains(document.activeElement)) renderInputs();
    if (form || !inspector.contains(document.activeElement)) renderForm();
    undoBtn && (undoBtn.disabled = !hist.canUndo);
    redoBtn && (redoBtn.disabled = !hist.canRedo);
    if (rw) check();
  }
  function edit(mutator, { form = false, key = null, from = null } = {}) {
    const d = structuredClone(def);
    mutator(d);
    def = d;
    hist.push(json(def), key);
    refresh({ from, form });
  }
  function travel(text) {
    if (text === null) return;
    def = JSON.parse(text);
    refresh({ form: true });
    ctx.say(hist.canUndo ? "Undone." : "Nothing more to undo.");
  }

  function rename(from, to) {
    if (!to || to === from) return;
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(to) || to in blocksOf(def)) {
      ctx.say(`Cannot rename to ${to}: ${to in blocksOf(def) ? "taken" : "use letters, digits, _ and -"}.`);
      renderForm();
      return;
    }
    edit((d) => {
      const blocks = {};
      for (const [k, v] of Object.entries(d.blocks)) blocks[k === from ? to : k] = k === from ? { ...v, id: to } : v;
      for (const b of Object.values(blocks)) {
        for (const e of exitsOf(b)) if (e.target && e.target.blockId === from) e.target.blockId = to;
      }
      d.blocks = blocks;
      if (d.onboardingBlockId === from) d.onboardingBlockId = to;
      const pos = d.meta && d.meta.positions;
      if (pos && pos[from]) { pos[to] = pos[from]; delete pos[from]; }
    }, { form: true });
    selected = to;
    renderForm();
    markCanvas();
  }

  function addBlock(type) {
    const blocks = blocksOf(def);
    let n = 1;
    while (`${type}${n}` in blocks) n += 1;
    const id = `${type}${n}`;
    const pos = positionsOf(def);
    const after = selected && pos[selected];
    const at = after ? { x: after.x + NODE_W + 80, y: after.y }
      : { x: 40 + Object.keys(blocks).length * (NODE_W + 80), y: 60 };
    // Never on top of another block: step down until the place is free.
    while (Object.values(pos).some((p) => Math.abs(p.x - at.x) < NODE_W && Math.abs(p.y - at.y) < 100)) at.y += 110;
    edit((d) => {
      d.blocks[id] = newBlock(type, id, schemas);
      d.meta = { ...(d.meta || {}), positions: { ...pos, ...((d.meta || {}).positions || {}), [id]: at } };
      if (!d.onboardingBlockId || !(d.onboardingBlockId in d.blocks)) d.onboardingBlockId = id;
      // Added after a block that goes nowhere yet: it becomes that block's next block.
      const prev = selected && d.blocks[selected];
      if (prev && prev.type !== "return" && !prev.defaultOutput) prev.defaultOutput = { type: "block", blockId: id };
    }, { form: true });
    select(id);
    ctx.say(`Added block ${id}.`);
  }

  // -- the shape check ----------------------------------------------------------------------
  async function check() {
    const seq = ++checkSeq;
    try {
      const res = await api("POST", "/definitions/check", def);
      if (seq !== checkSeq) return;
      serverProblems = res.problems;
    } catch (err) {
      if (seq !== checkSeq || !(err instanceof ApiError)) return;
      serverProblems = err.problems.length ? err.problems : [{ path: "$", message: err.message }];
    }
    // The nodes on screen show this very definition (a newer edit would have a newer seq):
    // marked in place, not redrawn, so a node being dragged stays in the hand.
    markCanvas();
    renderProblems();
    if (!inspector.contains(document.activeElement)) renderForm();
  }

  // -- the JSON view ------------------------------------------------------------------------
  let timer = null;
  // Applies the JSON view to the definition; false when it is not a JSON object.
  function applyJson() {
    timer = null;
    const [parsed, error] = parseJson(doc.value, "JSON");
    if (error || typeof parsed !== "object" || Array.isArray(parsed) || parsed === null) {
      serverProblems = [{ path: "$", message: error || "the definition must be a JSON object" }];
      renderProblems();
      return false;
    }
    def = parsed;
    if (!def.blocks || typeof def.blocks !== "object") def.blocks = {};
    hist.push(json(def), "json");
    refresh({ from: "json", form: true });
    return true;
  }
  doc.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(applyJson, 250);
  });
  // A save right after typing in the JSON (within the debounce) saves what was typed.
  function flushJson() {
    if (timer === null) return;
    clearTimeout(timer);
    if (!applyJson()) throw new Error("the JSON view is not a valid definition: fix it before saving");
  }
  ctx.onLeave(() => clearTimeout(timer));

  // -- agents configuration: visible only while enabledForAI is on -----------------------------
  const aiToggle = h("input", { type: "checkbox", name: "enabledForAI", checked: !!def.enabledForAI, disabled: !rw });
  const agents = h("fieldset", { class: "agents" });
  function renderAgents() {
    aiToggle.checked = !!def.enabledForAI;
    if (!def.enabledForAI) { agents.hidden = true; agents.replaceChildren(); return; }
    if (agents.contains(document.activeElement)) return;
    agents.hidden = false;
    const put = (key) => (ev) => edit((d) => { d[key] = ev.target.value || undefined; }, { key: `agents.${key}` });
    const inputs = Array.isArray(def.inputs) ? def.inputs : [];
    clear(agents,
      h("legend", {}, "Agents configuration"),
      field("Slug", h("input", { type: "text", name: "slug", value: def.slug || "", readonly: !rw, oninput: put("slug") }),
        "The function name agents call: letters, digits, _ and -, up to 64."),
      field("Description for agents", h("textarea", { name: "aiDescription", rows: 2, value: def.description || "", readonly: !rw, oninput: put("description") }),
        "Sent to the LLM; empty means the tool's description."),
      field("Return description", h("textarea", { name: "returnDescription", rows: 2, value: def.returnDescription || "", readonly: !rw, oninput: put("returnDescription") })),
      inputs.map((inp, i) => field(`Description of input ${inp && inp.name}`,
        h("input", { type: "text", value: (inp && inp.description) || "", readonly: !rw,
          oninput: (ev) => edit((d) => { d.inputs[i].description = ev.target.value || undefined; }, { key: `agents.input.${i}` }) }))));
  }
  aiToggle.addEventListener("change", () => edit((d) => { d.enabledForAI = aiToggle.checked; }));

  // -- declared inputs ------------------------------------------------------------------------
  const inputsBox = h("div", { class: "inputs-box" });
  function renderInputs() {
    const inputs = Array.isArray(def.inputs) ? def.inputs : [];
    const put = (fn) => edit((d) => { d.inputs = Array.isArray(d.inputs) ? d.inputs : []; fn(d.inputs); });
    clear(inputsBox, inputs.length ? h("ul", { class: "inputs-list" }, inputs.map((inp, i) => h("li", {},
      h("input", { type: "text", name: "inputName", value: (inp && inp.name) || "", readonly: !rw, "aria-label": `Name of input ${i + 1}`,
        onchange: (ev) => put((xs) => { xs[i].name = ev.target.value; }) }),
      h("select", { name: "inputType", disabled: !rw, "aria-label": `Type of input ${i + 1}`, onchange: (ev) => put((xs) => { xs[i].type = ev.target.value; }) },
        ["string", "number", "boolean", "json"].map((t) => h("option", { value: t, selected: (inp && inp.type) === t }, t))),
      rw ? button("Remove", () => put((xs) => { xs.splice(i, 1); }), { "aria-label": `Remove input ${inp && inp.name}` }) : null)))
      : h("p", { class: "muted" }, "No inputs declared."),
    rw ? field("New input name", h("input", { type: "text", name: "newInput", onkeydown: (ev) => {
      if (ev.key !== "Enter" || !ev.target.value.trim()) return;
      ev.preventDefault();
      const n = ev.target.value.trim();
      ev.target.blur();
      put((xs) => { xs.push({ name: n, type: "string" }); });
      inputsBox.querySelector("[name=newInput]").focus();
    } }), "Press Enter to add it; blocks read it as {{name}}.") : null);
  }

  // -- the test panel's block choices follow the document ---------------------------------------
  const startBlock = h("select", { name: "startBlock" });
  const oneBlock = h("select", { name: "block" });
  function renderChoices() {
    const ids = Object.keys(blocksOf(def));
    for (const [sel, first] of [[startBlock, def.onboardingBlockId], [oneBlock, null]]) {
      const keep = sel.value || first;
      sel.replaceChildren(...ids.map((id) => h("option", { value: id, selected: id === keep }, id)));
    }
  }

  // -- the test panel's field per declared input (so a run needs no JSON typed) -----------------
  const testInputs = h("div", { class: "test-inputs" });
  const testValues = new Map(); // name → what was typed, kept across redraws
  function renderTestInputs() {
    const declared = (Array.isArray(def.inputs) ? def.inputs : []).filter((x) => x && x.name);
    if (testInputs.contains(document.activeElement)) return;
    testInputs.replaceChildren(...declared.map((inp) => field(`Input ${inp.name}`,
      h("input", { type: "text", name: `input.${inp.name}`, value: testValues.get(inp.name) || "",
        oninput: (ev) => testValues.set(inp.name, ev.target.value) }),
      inp.type && inp.type !== "string" ? `A ${inp.type}${inp.type === "json" ? " (JSON)" : ""}.` : null)));
  }
  /** The declared inputs' fields over the JSON box: a field left empty is not sent. */
  function testInputValues(fromJson) {
    const out = { ...fromJson };
    for (const inp of Array.isArray(def.inputs) ? def.inputs : []) {
      const raw = inp && testValues.get(inp.name);
      if (!raw) continue;
      if (inp.type === "number" && raw.trim() !== "" && !Number.isNaN(Number(raw))) out[inp.name] = Number(raw);
      else if (inp.type === "boolean" && (raw === "true" || raw === "false")) out[inp.name] = raw === "true";
      else if (inp.type === "json") { try { out[inp.name] = JSON.parse(raw); } catch { out[inp.name] = raw; } }
      else out[inp.name] = raw;
    }
    return out;
  }

  // -- save, publish, trash -------------------------------------------------------------------
  async function save() {
    flushJson();
    let saved;
    if (toolId === null) {
      saved = await api("POST", "/tools", { name: name.value, description: description.value || null, definition: def });
      toolId = saved.id;
      // The address becomes the tool's without reloading the page (and its undo history).
      ctx.replace(`#/tools/${enc(toolId)}`);
    } else {
      saved = await api("PATCH", `/tools/${enc(toolId)}`, { name: name.value, description: description.value || null, definition: def });
    }
    savedAs = snapshot();
    showState(saved);
    heading.textContent = saved.name;
    if (saveBtn) saveBtn.textContent = "Save draft";
    return saved;
  }
  async function act(fn, done) {
    publishOut.replaceChildren();
    try { const r = await fn(); publishOut.replaceChildren(h("p", { class: "ok", role: "status" }, done(r))); }
    catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (err.problems.length) { serverProblems = err.problems; renderProblems(); markCanvas(); }
      // The publish gate's failing cases and their runs, beside the Publish button.
      publishOut.replaceChildren(err.body.error === "tests_failed" ? gateFailures(err, { force: publish }) : refusal(err));
    }
  }
  async function trash() {
    if (toolId === null) { savedAs = snapshot(); ctx.go("#/tools"); return; }
    const { callers } = await api("GET", `/tools/${enc(toolId)}/callers`);
    const ok = await confirmDialog({
      title: `Move ${name.value} to the trash?`,
      body: callers.length
        ? [h("p", {}, "These published tools still call it, and will fail when they reach it:"),
          h("ul", { "aria-label": "Callers" }, callers.map((c) => h("li", {}, `${c.name} (${c.id})`)))]
        : [h("p", {}, "No published tool calls it. It stops running, and can be restored from the trash.")],
      confirm: "Move to trash", danger: true });
    if (ok === null) return;
    await act(async () => { await api("DELETE", `/tools/${enc(toolId)}`); savedAs = snapshot(); ctx.go("#/trash"); }, () => "Moved to the trash.");
  }
  // Publishes the draft; the saved test cases run first (``note``: with ``force``, past them).
  function publish(note) {
    const body = note === undefined ? {} : { force: true, note };
    return act(async () => { await save(); return api("POST", `/tools/${enc(toolId)}/publish`, body); },
      (t) => { published(t); return `Published as ${t.publishedTool ? t.publishedTool.id : t.publishedToolId}, version ${t.publishedVersion}.`; });
  }
  function published(t) {
    showState(t);
    for (const panel of [versions, cases]) if (panel) panel.reload().catch(() => {});
  }
  const undoBtn = rw ? button("Undo", () => travel(hist.undo()), { "aria-keyshortcuts": "Control+Z" }) : null;
  const redoBtn = rw ? button("Redo", () => travel(hist.redo()), { "aria-keyshortcuts": "Control+Shift+Z" }) : null;
  const actions = rw ? h("div", { class: "actions" },
    undoBtn, redoBtn, saveBtn,
    button("Publish", () => publish(), { class: "primary" }),
    button(isNew ? "Discard" : "Move to trash", trash, { class: "danger" })) : null;

  // Undo/redo from the keyboard, except inside a text field (which has its own undo).
  const onKey = (ev) => {
    if (!(ev.ctrlKey || ev.metaKey) || ev.altKey) return;
    const t = ev.target;
    if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type !== "checkbox"))) return;
    const k = ev.key.toLowerCase();
    if (k === "z" && !ev.shiftKey) { ev.preventDefault(); travel(hist.undo()); }
    else if ((k === "z" && ev.shiftKey) || k === "y") { ev.preventDefault(); travel(hist.redo()); }
  };
  if (rw) {
    document.addEventListener("keydown", onKey);
    ctx.onLeave(() => document.removeEventListener("keydown", onKey));
    const onUnload = (ev) => { if (dirty()) { ev.preventDefault(); ev.returnValue = ""; } };
    window.addEventListener("beforeunload", onUnload);
    ctx.onLeave(() => window.removeEventListener("beforeunload", onUnload));
    ctx.guard && ctx.guard(() => (dirty() ? `${name.value} has unsaved changes. Leave and lose them?` : null));
  }

  // -- test panel (runs the draft as it is, in the API process) --------------------------------
  let testPanel = null;
  if (rw) {
    const inputs = h("textarea", { name: "inputs", class: "code", rows: 3, value: "{}" });
    const variables = h("textarea", { name: "variables", class: "code", rows: 3, value: "{}" });
    const out = h("div", { class: "test-out", "aria-live": "polite" });
    const run = async (path, body) => {
      out.replaceChildren(h("p", {}, "Running…"));
      try {
        const res = await api("POST", path, body);
        showTestRun(out, res, body);
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
        h("div", {}, field("Start block", startBlock), testInputs, field("Inputs (JSON)", inputs, "Other inputs; the fields above win."),
          button("Run flow", withJson(inputs, "Inputs", (v) => run("/tools/test-flow", { definition: def, ...(toolId === null ? {} : { toolId }), startBlockId: startBlock.value || null, inputs: testInputValues(v) })))),
        h("div", {}, field("Block to test", oneBlock), field("Variables (JSON)", variables),
          button("Test block", withJson(variables, "Variables", (v) => run("/tools/test-block", { block: blocksOf(def)[oneBlock.value] || {}, variables: v }))))),
      out);
  }

  const days = isNew ? null : await optional(api("GET", `/tools/${enc(toolId)}/daily`).then((r) => r.days), null);
  const panelEnv = { ctx, tool: { id: isNew ? null : toolId }, rw, onPublished: published };
  const cases = casesPanel(panelEnv);
  const versions = versionsPanel(panelEnv);

  const palette = rw ? h("section", { class: "palette", "aria-labelledby": "palette-h" },
    h("h2", { id: "palette-h" }, "Add block"),
    h("ul", {}, TYPES.map((t) => h("li", {}, button(`+ ${TYPE_NAMES[t]}`, () => addBlock(t), { "aria-label": `Add ${t} block`, "data-type": t }))))) : null;
  const tools_ = h("div", { class: "canvas-tools", role: "toolbar", "aria-label": "Canvas" },
    button("Zoom in", () => canvas.zoom(1)), button("Zoom out", () => canvas.zoom(-1)), button("Reset zoom", () => canvas.zoom(0)),
    button("Fit", () => canvas.fit(), { "aria-label": "Fit the flow in view" }),
    rw ? button("Layout", () => { edit((d) => { d.meta = { ...(d.meta || {}), positions: autoLayout(d) }; }); canvas.fit(); }) : null);

  const page = h("article", { "aria-labelledby": "tool-h", class: "builder" },
    h("div", { class: "bar" }, heading, actions),
    state, publishOut,
    h("section", { class: "card", "aria-label": "Name and description" },
      field("Name", name), field("Description", description)),
    h("div", { class: "workbench" },
      h("section", { class: "board", "aria-labelledby": "draw-h" }, h("h2", { id: "draw-h" }, "Flow"), tools_, canvasBox,
        h("p", { class: "hint" }, rw ? "Drag a block to move it, drag from a block's right-hand dot to another block to connect, drag the background to pan, Ctrl+wheel to zoom. Select an edge or block and press Delete to remove it."
          : "Read-only: a viewer key cannot change tools.")),
      h("aside", { class: "side", "aria-label": "Palette and block" }, palette, inspector)),
    h("div", { class: "editor" },
      h("section", { "aria-labelledby": "def-h" }, h("h2", { id: "def-h" }, "Definition"),
        field("Definition (JSON)", doc, rw ? "The same definition as the canvas: edit either, the other follows."
          : "Read-only: a viewer key cannot change tools.")),
      h("div", { class: "side" }, rw ? problemsBox : null,
        h("section", { "aria-labelledby": "inputs-h" }, h("h2", { id: "inputs-h" }, "Inputs"), inputsBox),
        h("section", { "aria-labelledby": "ai-h" }, h("h2", { id: "ai-h" }, "AI agents"),
          rw ? h("div", { class: "check" }, aiToggle, h("label", { for: aiToggle.id || (aiToggle.id = "enabled-ai") }, "Enabled for AI agents"))
            : h("p", {}, def.enabledForAI ? "Enabled for AI agents." : "Not enabled for AI agents."),
          agents))),
    testPanel,
    cases, versions,
    isNew ? null : recentRuns(toolId),
    days ? h("section", { "aria-labelledby": "days-h" }, h("h2", { id: "days-h" }, "Last seven days"), chart(days)) : null);
  // The canvas measures itself, so it is drawn once the page is in the document.
  ctx.afterMount(() => { refresh({ form: true }); canvas.fit(); });
  return page;
}
