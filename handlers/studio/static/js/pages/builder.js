// The builder: the canvas (js/builder/canvasView.js) with a palette, the selected block's form
// (js/builder/blockPanel.js, made from the validation schema by js/forms.js), and the definition
// as JSON; the three follow one store (js/builder/store.js), so they stay in sync both ways, and
// undo/redo covers every edit. Problems show as badges on nodes and marked fields. Around them:
// the tool's name, state and actions (js/builder/toolDoc.js) and the panels (js/builder/panels.js).
import { api } from "../api.js";
import { h } from "../dom.js";
import { blockPanel } from "../builder/blockPanel.js";
import { canvasView } from "../builder/canvasView.js";
import { jsonView } from "../builder/jsonView.js";
import { palette } from "../builder/palette.js";
import { makePanels } from "../builder/panels.js";
import { createProblems } from "../builder/problems.js";
import { createStore } from "../builder/store.js";
import { toolDoc } from "../builder/toolDoc.js";

const enc = encodeURIComponent;
let schemaCache = null;

/** The tool (or a new one), the schema and what the pickers offer, as the builder's env. */
async function load(ctx, toolId, newName) {
  const saved = toolId === null
    ? { name: newName || "Untitled tool", description: "", definition: { onboardingBlockId: null, blocks: {} } }
    : await api("GET", `/tools/${enc(toolId)}`);
  schemaCache = schemaCache || await api("GET", "/definitions/schema");
  const optional = (path) => api("GET", path).catch(() => []);
  const [tools, servers, creds] = await Promise.all([optional("/tools"), optional("/integration-servers"), optional("/llm-credentials")]);
  const store = createStore(saved.definition);
  const problems = createProblems(store);
  if (ctx.canWrite) store.subscribe((change) => { if (change.name !== "select") problems.check(); });
  return { store, problems, ctx, rw: ctx.canWrite, schemas: schemaCache, saved, tool: { id: toolId },
    lookups: { tools: tools.filter((t) => t.id !== toolId), servers, creds }, jump: null, flush: null,
    published: [] };
}

export async function builderPage(ctx, toolId, newName) {
  const env = await load(ctx, toolId, newName);
  const canvas = canvasView(env);
  const form = blockPanel(env);
  const json = jsonView(env);
  env.flush = json.flush;
  env.jump = (path) => { if (!form.focusPath(path)) json.reveal(path); };
  const doc = toolDoc(env, env.saved);
  const slots = await makePanels(env);
  const hint = env.rw ? "Drag a block to move it, drag from a block's right-hand dot to another block to connect, drag the background to pan, Ctrl+wheel to zoom. Select an edge or block and press Delete to remove it."
    : "Read-only: a viewer key cannot change tools.";
  const page = h("article", { "aria-labelledby": "tool-h", class: "builder" },
    h("div", { class: "bar" }, doc.heading, doc.actions),
    doc.state, doc.out, doc.fields,
    h("div", { class: "workbench" },
      h("section", { class: "board", "aria-labelledby": "draw-h" }, h("h2", { id: "draw-h" }, "Flow"), canvas.el, h("p", { class: "hint" }, hint)),
      h("aside", { class: "side", "aria-label": "Palette and block" }, palette(env, canvas), form.el)),
    h("div", { class: "editor" }, json.el, h("div", { class: "side" }, slots.side)),
    slots.below);
  // The canvas measures itself, so it is drawn once the page is in the document.
  ctx.afterMount(() => { env.store.load(); canvas.fit(); });
  return page;
}
