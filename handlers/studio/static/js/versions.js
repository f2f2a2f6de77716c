// A tool's published versions (docs/registry.md "Versions"): who published each and why, two
// versions (or the draft) compared on a read-only canvas with the blocks added, changed and
// removed marked, and a rollback that names the published tools calling this one before it
// goes. A rollback is a publish: the saved test cases run on the version first, and their
// failures refuse it as they refuse a publish, with "Roll back anyway…" (js/cases.js).
// A panel of the builder page (js/builder/panels.js): versionsPanel(env).
import { api, ApiError } from "./api.js";
import { createCanvas } from "./canvas.js";
import { gateFailures } from "./cases.js";
import { confirmDialog } from "./dialog.js";
import { blocksOf } from "./graph.js";
import { button, field, h, table, when } from "./dom.js";
import { refusal } from "./pages/tools.js";

const enc = encodeURIComponent;
const KINDS = { added: "added", changed: "changed", removed: "removed" };

/**
 * What a diff draws: the `to` definition with the blocks `from` had and `to` lost put back at
 * their places, and each block's kind of change.
 * @returns {{ def: any, marks: Map<string, string> }}
 */
export function diffDrawing(from, to, diff) {
  const def = JSON.parse(JSON.stringify(to || { blocks: {} }));
  def.blocks = def.blocks || {};
  const fromPos = (from && from.meta && from.meta.positions) || {};
  const marks = new Map();
  for (const b of diff.blocks.added) marks.set(b.id, KINDS.added);
  for (const id of Object.keys(diff.blocks.changed)) marks.set(id, KINDS.changed);
  for (const b of diff.blocks.removed) {
    def.blocks[b.id] = blocksOf(from)[b.id];
    if (fromPos[b.id]) def.meta = { ...(def.meta || {}), positions: { ...((def.meta || {}).positions || {}), [b.id]: fromPos[b.id] } };
    marks.set(b.id, KINDS.removed);
  }
  return { def, marks };
}

function sideName(side) { return side === "draft" ? "the draft" : `version ${side}`; }

function changeList(diff) {
  const line = (c) => `${c.field}: ${"from" in c ? JSON.stringify(c.from) : "(none)"} → ${"to" in c ? JSON.stringify(c.to) : "(none)"}`;
  const items = [
    ...diff.fields.map((c) => h("li", {}, line(c))),
    ...diff.blocks.added.map((b) => h("li", { class: "diff-added" }, `block ${b.id} (${b.type}) added`)),
    ...diff.blocks.removed.map((b) => h("li", { class: "diff-removed" }, `block ${b.id} (${b.type}) removed`)),
    ...Object.entries(diff.blocks.changed).map(([id, changes]) => h("li", { class: "diff-changed" },
      `block ${id} changed`, h("ul", {}, changes.map((c) => h("li", {}, line(c)))))),
  ];
  return items.length ? h("ul", { class: "changes", "aria-label": "Changes" }, items)
    : h("p", { class: "muted" }, "No difference.");
}

/** The versions as a table, newest first; ``rollback(n)`` for an older one (editors). */
function versionTable(data, rollback) {
  const rows = data.versions.map((v) => h("tr", {},
    h("th", { scope: "row" }, `v${v.version}${v.version === data.current ? " (live)" : ""}`),
    h("td", {}, when(v.publishedAt)),
    h("td", {}, v.keyName || v.keyId || "—"),
    h("td", {}, [v.note || "", v.rollbackOf ? ` (rollback to v${v.rollbackOf})` : "",
      v.forced ? ` (forced past ${v.forced.failed.length} failing case(s))` : ""].join("").trim() || "—"),
    h("td", {}, rollback && v.version !== data.current
      ? button(`Roll back to v${v.version}`, () => rollback(v.version)) : null)));
  return table("Published versions, newest first", ["Version", "Published", "By", "Note", ""], rows,
    "Not published yet: a publish makes version 1.");
}

/** Two versions (or the draft) picked, compared: the list of changes and the marked canvas. */
function comparer(toolId) {
  const fromSel = h("select", { name: "from" });
  const toSel = h("select", { name: "to" });
  const compared = h("div", { "aria-live": "polite" });
  const canvasBox = h("div", { class: "canvas diff-canvas", role: "group", "aria-label": "Compared versions" });
  canvasBox.hidden = true;
  const side = async (value) => (value === "draft"
    ? (await api("GET", `/tools/${enc(toolId)}`)).definition
    : (await api("GET", `/tools/${enc(toolId)}/versions/${enc(value)}`)).definition);
  async function compare() {
    const [a, b] = [fromSel.value, toSel.value];
    compared.replaceChildren(h("p", {}, "Comparing…"));
    try {
      const [diff, from, to] = await Promise.all([
        api("GET", `/tools/${enc(toolId)}/diff?from=${enc(a)}&to=${enc(b)}`), side(a), side(b)]);
      compared.replaceChildren(h("h3", {}, `From ${sideName(a)} to ${sideName(b)}`), changeList(diff),
        h("p", { class: "hint" }, "On the canvas: added blocks are green, changed ones amber, removed ones red and dashed."));
      canvasBox.hidden = false;
      drawDiff(canvasBox, diffDrawing(from, to, diff));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      compared.replaceChildren(refusal(err));
    }
  }
  /** The choices: every version and the draft, keeping what was picked. */
  function offer(versions) {
    const choices = (sel, keep) => sel.replaceChildren(
      ...versions.map((v) => h("option", { value: String(v.version), selected: String(v.version) === keep }, `version ${v.version}`)),
      h("option", { value: "draft", selected: keep === "draft" }, "the draft"));
    choices(fromSel, fromSel.value || (versions[1] ? String(versions[1].version) : "draft"));
    choices(toSel, toSel.value || (versions[0] ? String(versions[0].version) : "draft"));
  }
  const el = [h("div", { class: "compare", role: "group", "aria-label": "Compare two versions" },
    field("From", fromSel), field("To", toSel), button("Compare", compare)), compared, canvasBox];
  return { el, offer };
}

/** The diff's drawing on a read-only canvas, each changed node marked (class and name). */
function drawDiff(box, { def, marks }) {
  const canvas = createCanvas(box, { editable: false });
  canvas.render(def);
  for (const [id, kind] of marks) {
    const node = box.querySelector(`[data-block="${CSS.escape(id)}"]`);
    if (!node) continue;
    node.classList.add(`diff-${kind}`);
    node.setAttribute("aria-label", `${node.getAttribute("aria-label")}, ${kind}`);
  }
  canvas.fit();
}

/** Asks first (naming the callers), and for a note: null when the user cancels. */
function askRollback(data, number) {
  const next = (data.versions[0] ? data.versions[0].version : 0) + 1;
  return confirmDialog({
    title: `Roll back to version ${number}?`,
    body: [h("p", {}, `Version ${number}'s definition is published again, as version ${next}, once its saved test cases pass. The draft is not changed.`),
      data.callers.length
        ? [h("p", {}, "These published tools call this one and run the rolled-back version from their next command:"),
          h("ul", { "aria-label": "Callers" }, data.callers.map((c) => h("li", {}, `${c.name} (${c.id})`)))]
        : h("p", {}, "No published tool calls this one.")],
    confirm: `Roll back to v${number}`, danger: true, reason: "Why (kept in the new version)" });
}

/** What the gate's refusal of a rollback says (js/cases.js `gateFailures`). */
function rollbackWords(number) {
  return { not: "Not rolled back", on: `version ${number}`, force: "Roll back anyway",
    title: `Roll back to version ${number} past failing test cases?`, reason: "Note (why roll back now)" };
}

/**
 * The Versions panel; a rollback is announced to ``env.published`` (the state line, the other
 * panels), and a publish from the page reloads the list.
 * @param {{ctx: any, tool: {id: string|null}, rw: boolean, published?: ((t: any) => void)[]}} env
 */
export function versionsPanel(env) {
  const { ctx, tool, rw } = env;
  if (tool.id === null) return null;
  const toolId = tool.id;
  const listBox = h("div", {});
  const out = h("div", { "aria-live": "polite" });
  const compare = comparer(toolId);
  let data = { versions: [], callers: [], current: null };
  async function load() {
    data = await api("GET", `/tools/${enc(toolId)}/versions`);
    listBox.replaceChildren(versionTable(data, rw ? (n) => rollback(n) : null));
    compare.offer(data.versions);
  }
  /** Publishes version ``number`` again (``force``: past failing cases, with ``note``). */
  async function rollback(number, force = false, note = null) {
    if (note === null) note = await askRollback(data, number);
    if (note === null) return;
    out.replaceChildren();
    try {
      const done = await api("POST", `/tools/${enc(toolId)}/rollback`, { version: number, note, ...(force ? { force } : {}) });
      out.replaceChildren(h("p", { class: "ok", role: "status" },
        `Version ${number} published again as version ${done.publishedVersion}.`));
      for (const fn of env.published || []) fn(done);
      ctx.say(`Rolled back to version ${number}.`);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      // The gate's failing cases and their runs, as beside Publish; forcing asks for a note.
      out.replaceChildren(err.body.error === "tests_failed"
        ? gateFailures(err, { force: (why) => rollback(number, true, why), words: rollbackWords(number), note })
        : refusal(err));
    }
  }
  if (env.published) env.published.push(() => { load().catch(() => {}); });
  ctx.afterMount(() => { load().catch(() => {}); });
  return h("section", { class: "card versions", "aria-labelledby": "versions-h" },
    h("h2", { id: "versions-h" }, "Versions"), out, listBox, compare.el);
}
