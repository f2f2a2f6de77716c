// The block panel: the selected block's form (js/forms.js, its field groups) with its problems
// marked, a rename that checks the new id, Delete block, and a problem path's control focused.
import { api } from "../api.js";
import { button, clear, h } from "../dom.js";
import { blockForm } from "../forms.js";
import { blockOfPath, blocksOf } from "../graph.js";

const enc = encodeURIComponent;
const FIRST = "input:not([readonly]), select, textarea";

/** The declared inputs of tool `id`'s published version (else its draft). */
async function inputsOf(id) {
  const t = await api("GET", `/tools/${enc(id)}`).catch(() => null);
  const d = t && ((t.publishedTool && t.publishedTool.definition) || t.definition);
  return (d && Array.isArray(d.inputs) ? d.inputs : []).filter((x) => x && x.name);
}

/**
 * The control of a problem path inside the open form: the one marked with the path's form key
 * (data-path, e.g. outputConditions.0.rules.0.operator), else with a shorter prefix of it, else
 * the field's own name. @param {HTMLElement} root @param {string} rest  the path after the block id
 */
export function controlFor(root, rest) {
  const segs = rest.split(".").filter(Boolean);
  for (let n = segs.length; n > 0; n -= 1) {
    const key = CSS.escape(segs.slice(0, n).join("."));
    const hit = root.querySelector(`[data-path="${key}"]`) || root.querySelector(`[data-path^="${key}."]`);
    if (hit) return hit;
  }
  return segs.length ? root.querySelector(`[name="${CSS.escape(segs[0])}"]`) : null;
}

/**
 * @param {{ store: import("./store.js").Store, problems: import("./problems.js").Problems,
 *   schemas: any, lookups: any, rw: boolean, ctx: any }} env
 */
export function blockPanel({ store, problems, schemas, lookups, rw, ctx }) {
  const el = h("div", { class: "inspector", "aria-live": "off" });
  function rename(from, to) {
    if (!to || to === from) return;
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(to) || to in blocksOf(store.def)) {
      ctx.say(`Cannot rename to ${to}: ${to in blocksOf(store.def) ? "taken" : "use letters, digits, _ and -"}.`);
      render();
      return;
    }
    store.dispatch("rename", { from, to }, { form: true });
  }
  const formCtx = () => ({
    def: store.def, schemas, lookups, readonly: !rw, problems: problems.byField(store.selected), inputsOf, rename,
    set: (blockId, key, value, opts = {}) => store.dispatch("setField", { blockId, key, value },
      { key: opts.coalesce ? `${blockId}.${key}` : null }),
    edit: (change, opts = {}) => store.dispatch("edit", { change },
      { form: !!opts.form, key: typeof opts.coalesce === "string" ? opts.coalesce : null }),
    setStart: (id) => store.dispatch("setStart", { id }),
  });
  function render() {
    const id = store.selected;
    if (!id || !(id in blocksOf(store.def))) {
      clear(el, h("h2", {}, "Block"), h("p", { class: "muted" },
        rw ? "Add a block from the palette, or select one on the canvas (click it, or Tab to it and press Enter)."
          : "Select a block on the canvas to read its fields."));
      return;
    }
    const b = blocksOf(store.def)[id];
    clear(el, h("h2", { id: "block-h" }, `Block ${id} (${b.type})`), blockForm(formCtx(), id),
      rw ? button("Delete block", () => store.dispatch("removeBlock", { id }, { form: true }),
        { class: "danger", "aria-label": `Delete block ${id}` }) : null);
  }
  store.subscribe((change) => {
    if (change.name === "select") {
      render();
      const first = el.querySelector(FIRST);
      if (first && rw) first.focus({ preventScroll: false });
    } else if (change.form || !el.contains(document.activeElement)) render();
  });
  problems.subscribe(() => { if (!el.contains(document.activeElement)) render(); });
  return {
    el,
    /** Opens the block a problem path names and focuses its control; false when it names none. @param {string} path */
    focusPath(path) {
      const [b] = blockOfPath(path);
      if (!b || !(b in blocksOf(store.def))) return false;
      store.select(b);
      const rest = String(path).slice(String(path).indexOf(`blocks.${b}`) + `blocks.${b}`.length + 1);
      (controlFor(el, rest) || el.querySelector("input, select, textarea") || el).focus();
      return true;
    },
  };
}
