// A tool's published versions (docs/registry.md "Versions"): who published each and why, two
// versions (or the draft) compared on a read-only canvas with the blocks added, changed and
// removed marked, and a rollback that names the published tools calling this one before it
// goes. A panel of the builder page: versionsPanel({ ctx, tool, rw, onPublished }).
import { api, ApiError } from "./api.js";
import { createCanvas } from "./canvas.js";
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

/** The Versions panel. @param {{ctx: any, tool: {id: string|null}, rw: boolean, onPublished?: (t: any) => void}} env */
export function versionsPanel({ ctx, tool, rw, onPublished }) {
  if (tool.id === null) return null;
  const toolId = tool.id;
  const listBox = h("div", {});
  const out = h("div", { "aria-live": "polite" });
  const fromSel = h("select", { name: "from" });
  const toSel = h("select", { name: "to" });
  const compared = h("div", { "aria-live": "polite" });
  const canvasBox = h("div", { class: "canvas diff-canvas", role: "group", "aria-label": "Compared versions" });
  canvasBox.hidden = true;
  let data = { versions: [], callers: [], current: null };

  async function load() {
    data = await api("GET", `/tools/${enc(toolId)}/versions`);
    const rows = data.versions.map((v) => h("tr", {},
      h("th", { scope: "row" }, `v${v.version}${v.version === data.current ? " (live)" : ""}`),
      h("td", {}, when(v.publishedAt)),
      h("td", {}, v.keyName || v.keyId || "—"),
      h("td", {}, [v.note || "", v.rollbackOf ? ` (rollback to v${v.rollbackOf})` : "",
        v.forced ? ` (forced past ${v.forced.failed.length} failing case(s))` : ""].join("").trim() || "—"),
      h("td", {}, rw && v.version !== data.current
        ? button(`Roll back to v${v.version}`, () => rollback(v.version)) : null)));
    listBox.replaceChildren(table("Published versions, newest first", ["Version", "Published", "By", "Note", ""], rows,
      "Not published yet: a publish makes version 1."));
    const choices = (sel, keep) => sel.replaceChildren(
      ...data.versions.map((v) => h("option", { value: String(v.version), selected: String(v.version) === keep }, `version ${v.version}`)),
      h("option", { value: "draft", selected: keep === "draft" }, "the draft"));
    const older = data.versions[1] ? String(data.versions[1].version) : "draft";
    choices(fromSel, fromSel.value || older);
    choices(toSel, toSel.value || (data.versions[0] ? String(data.versions[0].version) : "draft"));
  }

  async function side(value) {
    if (value === "draft") return (await api("GET", `/tools/${enc(toolId)}`)).definition;
    return (await api("GET", `/tools/${enc(toolId)}/versions/${enc(value)}`)).definition;
  }

  async function compare() {
    const [a, b] = [fromSel.value, toSel.value];
    compared.replaceChildren(h("p", {}, "Comparing…"));
    try {
      const [diff, from, to] = await Promise.all([
        api("GET", `/tools/${enc(toolId)}/diff?from=${enc(a)}&to=${enc(b)}`), side(a), side(b)]);
      const { def, marks } = diffDrawing(from, to, diff);
      compared.replaceChildren(h("h3", {}, `From ${sideName(a)} to ${sideName(b)}`), changeList(diff),
        h("p", { class: "hint" }, "On the canvas: added blocks are green, changed ones amber, removed ones red and dashed."));
      canvasBox.hidden = false;
      const canvas = createCanvas(canvasBox, { editable: false });
      canvas.render(def);
      for (const [id, kind] of marks) {
        const node = canvasBox.querySelector(`[data-block="${CSS.escape(id)}"]`);
        if (!node) continue;
        node.classList.add(`diff-${kind}`);
        node.setAttribute("aria-label", `${node.getAttribute("aria-label")}, ${kind}`);
      }
      canvas.fit();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      compared.replaceChildren(refusal(err));
    }
  }

  async function rollback(number) {
    const next = (data.versions[0] ? data.versions[0].version : 0) + 1;
    const note = await confirmDialog({
      title: `Roll back to version ${number}?`,
      body: [h("p", {}, `Version ${number}'s definition is published again, as version ${next}. The draft is not changed.`),
        data.callers.length
          ? [h("p", {}, "These published tools call this one and run the rolled-back version from their next command:"),
            h("ul", { "aria-label": "Callers" }, data.callers.map((c) => h("li", {}, `${c.name} (${c.id})`)))]
          : h("p", {}, "No published tool calls this one.")],
      confirm: `Roll back to v${number}`, danger: true, reason: "Why (kept in the new version)" });
    if (note === null) return;
    try {
      const done = await api("POST", `/tools/${enc(toolId)}/rollback`, { version: number, note });
      out.replaceChildren(h("p", { class: "ok", role: "status" },
        `Version ${number} published again as version ${done.publishedVersion}.`));
      if (onPublished) onPublished(done);
      await load();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.replaceChildren(refusal(err));
    }
    ctx.say(`Rolled back to version ${number}.`);
  }

  const section = h("section", { class: "card versions", "aria-labelledby": "versions-h" },
    h("h2", { id: "versions-h" }, "Versions"), out, listBox,
    h("div", { class: "compare", role: "group", "aria-label": "Compare two versions" },
      field("From", fromSel), field("To", toSel), button("Compare", compare)),
    compared, canvasBox);
  section.reload = load;
  ctx.afterMount(() => { load().catch(() => {}); });
  return section;
}
