// The tool as a document: its name and description, its state (draft, published, version) with
// a mark while it has unsaved changes, and Undo, Redo, Save, Publish and Move to trash; leaving
// with unsaved changes asks first. A tool made by "New tool" exists only from its first save.
import { api, ApiError } from "../api.js";
import { gateFailures } from "../cases.js";
import { confirmDialog } from "../dialog.js";
import { button, field, h } from "../dom.js";
import { refusal } from "../pages/tools.js";
import { describe } from "./store.js";

const enc = encodeURIComponent;

/**
 * @typedef {object} DocEnv
 * @property {import("./store.js").Store} store
 * @property {import("./problems.js").Problems} problems
 * @property {any} ctx
 * @property {boolean} rw
 * @property {{id: string|null}} tool  the tool's id, null until a new tool's first save
 * @property {() => void} flush  applies what is typed in the JSON view
 * @property {((t: any) => void)[]} published  told of each publish (the tool as published)
 */

/** "draft", "published · published as pt-… · version 3": the live version's number (a save
 * bumps only the draft's revision, which is not shown). */
function stateText(t) {
  if (!t) return "new · not saved yet";
  const pub = t.publishedTool || null;
  const live = t.publishedVersion ?? (pub ? pub.version : undefined);
  return `${t.status || (pub ? "published" : "draft")}${pub ? ` · published as ${pub.id}` : ""}`
    + `${live !== undefined && live !== null ? ` · version ${live}` : ""}`;
}

/** Undo/redo from the keyboard, except inside a text field (which has its own undo). */
function undoKeys(travel) {
  return (ev) => {
    if (!(ev.ctrlKey || ev.metaKey) || ev.altKey) return;
    const t = ev.target;
    if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type !== "checkbox"))) return;
    const k = ev.key.toLowerCase();
    if (k === "z" && !ev.shiftKey) { ev.preventDefault(); travel("undo"); }
    else if ((k === "z" && ev.shiftKey) || k === "y") { ev.preventDefault(); travel("redo"); }
  };
}

/** Asks before leaving with unsaved changes: another page, sign out, closing the tab. */
function guardLeaving(ctx, dirty, name) {
  const onUnload = (ev) => { if (dirty()) { ev.preventDefault(); ev.returnValue = ""; } };
  window.addEventListener("beforeunload", onUnload);
  ctx.onLeave(() => window.removeEventListener("beforeunload", onUnload));
  ctx.guard && ctx.guard(() => (dirty() ? `${name.value} has unsaved changes. Leave and lose them?` : null));
}

/** The name, description and state; what a save writes and whether there is anything to save. */
function identity(env, saved) {
  const { store, rw } = env;
  const name = h("input", { type: "text", name: "name", value: saved.name || "", readonly: !rw });
  const description = h("textarea", { name: "description", rows: 2, value: saved.description || "", readonly: !rw });
  const snapshot = () => JSON.stringify([name.value, description.value, store.def]);
  let savedAs = env.tool.id === null ? null : snapshot();
  const dirty = () => rw && snapshot() !== savedAs;
  const unsaved = h("span", { class: "unsaved", hidden: true }, "Unsaved changes");
  const state = h("p", { class: "muted" }, h("span", {}, stateText(env.tool.id === null ? null : saved)), " ", unsaved);
  const mark = () => { unsaved.hidden = !dirty(); };
  store.subscribe(mark);
  name.addEventListener("input", mark);
  description.addEventListener("input", mark);
  return { name, description, state, dirty, mark,
    fields: () => ({ name: name.value, description: description.value || null, definition: store.def }),
    saved: (t) => { savedAs = snapshot(); state.firstChild.textContent = stateText(t); mark(); },
    forget: () => { savedAs = snapshot(); } };
}

/** @param {DocEnv} env @param {any} saved  the tool as the API has it (or a new one's name) */
export function toolDoc(env, saved) {
  const { problems, ctx, rw, tool } = env;
  const doc = identity(env, saved);
  const heading = h("h1", { id: "tool-h" }, saved.name);
  const out = h("div", { "aria-live": "polite" });
  const saveBtn = rw ? button(tool.id === null ? "Save" : "Save draft", () => act(save, () => "Draft saved.")) : null;
  async function save() {
    env.flush();
    const isNew = tool.id === null;
    const t = await api(isNew ? "POST" : "PATCH", isNew ? "/tools" : `/tools/${enc(tool.id)}`, doc.fields());
    // A new tool's address becomes its own without reloading the page (and its undo history).
    if (isNew) { tool.id = t.id; ctx.replace(`#/tools/${enc(tool.id)}`); }
    doc.saved(t);
    heading.textContent = t.name;
    if (saveBtn) saveBtn.textContent = "Save draft";
    return t;
  }
  async function act(fn, done) {
    out.replaceChildren();
    try { const r = await fn(); out.replaceChildren(h("p", { class: "ok", role: "status" }, done(r))); }
    catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (err.problems.length) problems.set(err.problems);
      // The publish gate's failing cases and their runs, beside the Publish button.
      out.replaceChildren(err.body.error === "tests_failed" ? gateFailures(err, { force: publish }) : refusal(err));
    }
  }
  env.published.push((t) => doc.saved(t));
  /** Publishes the draft; its saved test cases run first (a ``note``: with force, past them). */
  function publish(note) {
    const body = note === undefined ? {} : { force: true, note };
    return act(async () => { await save(); return api("POST", `/tools/${enc(tool.id)}/publish`, body); },
      (t) => {
        for (const fn of env.published) fn(t);
        return `Published as ${t.publishedTool ? t.publishedTool.id : t.publishedToolId}, version ${t.publishedVersion}.`;
      });
  }
  const actions = rw ? docActions(env, doc, { saveBtn, publish, act }) : null;
  return { heading, state: doc.state, out, actions,
    fields: h("section", { class: "card", "aria-label": "Name and description" },
      field("Name", doc.name), field("Description", doc.description)) };
}

/** Undo, Redo, Save, Publish and Move to trash (or Discard, for a tool never saved). */
function docActions(env, doc, { saveBtn, publish, act }) {
  const { store, ctx, tool } = env;
  const travel = (way) => {
    const label = store[way]();
    const done = way === "undo" ? "Undone" : "Redone";
    ctx.say(label === null ? `Nothing more to ${way}.` : `${done}: ${describe(label)}.`);
  };
  const undoBtn = button("Undo", () => travel("undo"), { "aria-keyshortcuts": "Control+Z" });
  const redoBtn = button("Redo", () => travel("redo"), { "aria-keyshortcuts": "Control+Shift+Z" });
  store.subscribe(() => { undoBtn.disabled = !store.canUndo; redoBtn.disabled = !store.canRedo; });
  const onKey = undoKeys(travel);
  document.addEventListener("keydown", onKey);
  ctx.onLeave(() => document.removeEventListener("keydown", onKey));
  guardLeaving(ctx, doc.dirty, doc.name);
  async function trash() {
    if (tool.id === null) { doc.forget(); ctx.go("#/tools"); return; }
    const { callers } = await api("GET", `/tools/${enc(tool.id)}/callers`);
    const ok = await confirmDialog({
      title: `Move ${doc.name.value} to the trash?`,
      body: callers.length
        ? [h("p", {}, "These published tools still call it, and will fail when they reach it:"),
          h("ul", { "aria-label": "Callers" }, callers.map((c) => h("li", {}, `${c.name} (${c.id})`)))]
        : [h("p", {}, "No published tool calls it. It stops running, and can be restored from the trash.")],
      confirm: "Move to trash", danger: true });
    if (ok === null) return;
    await act(async () => { await api("DELETE", `/tools/${enc(tool.id)}`); doc.forget(); ctx.go("#/trash"); }, () => "Moved to the trash.");
  }
  return h("div", { class: "actions" }, undoBtn, redoBtn, saveBtn,
    button("Publish", () => publish(), { class: "primary" }),
    button(tool.id === null ? "Discard" : "Move to trash", trash, { class: "danger" }));
}
