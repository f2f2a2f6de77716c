// The JSON view: the definition as text, rewritten after every edit made elsewhere, and applied
// to the store 250 ms after typing stops (or at once before a save).
import { field, h, json } from "../dom.js";

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

/** [value, null] or [null, "what: why"]. @param {string} text @param {string} what */
export function parseJson(text, what) {
  try { return [JSON.parse(text || "{}"), null]; } catch (err) { return [null, `${what}: ${err.message}`]; }
}

/**
 * @param {{ store: import("./store.js").Store, problems: import("./problems.js").Problems,
 *   rw: boolean, ctx: any }} env
 */
export function jsonView({ store, problems, rw, ctx }) {
  const doc = h("textarea", { name: "definition", class: "code", rows: 20, spellcheck: "false", value: json(store.def), readonly: !rw });
  let timer = null;
  /** Applies the text to the store; false when it is not a JSON object. */
  function apply() {
    timer = null;
    const [parsed, error] = parseJson(doc.value, "JSON");
    if (error || typeof parsed !== "object" || Array.isArray(parsed) || parsed === null) {
      problems.set([{ path: "$", message: error || "the definition must be a JSON object" }]);
      return false;
    }
    store.dispatch("replace", { definition: parsed }, { key: "json", from: "json", form: true });
    return true;
  }
  doc.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(apply, 250);
  });
  ctx.onLeave(() => clearTimeout(timer));
  store.subscribe((change) => { if (change.from !== "json" && change.name !== "select") doc.value = json(store.def); });
  const el = h("section", { "aria-labelledby": "def-h" }, h("h2", { id: "def-h" }, "Definition"),
    field("Definition (JSON)", doc, rw ? "The same definition as the canvas: edit either, the other follows."
      : "Read-only: a viewer key cannot change tools."));
  return {
    el,
    /** A save right after typing (within the debounce) saves what was typed. */
    flush() {
      if (timer === null) return;
      clearTimeout(timer);
      if (!apply()) throw new Error("the JSON view is not a valid definition: fix it before saving");
    },
    /** Selects the key a problem path names in the text. @param {string} path */
    reveal(path) {
      const i = locate(doc.value, path);
      doc.focus();
      doc.setSelectionRange(i, i + String(path).split(".").pop().length + 2);
    },
  };
}
