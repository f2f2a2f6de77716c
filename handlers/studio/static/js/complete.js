// {{variable}} completion: typing "{{" in a field that interpolates opens a listbox of the
// names that exist at that block (the tool's inputs, the variables earlier blocks write),
// narrowed as you type. ArrowDown/ArrowUp move, Enter (or a click) inserts "{{name}}", Esc
// closes. The field keeps focus throughout (aria-activedescendant), so typing goes on.
import { h, id as uid } from "./dom.js";

/** The "{{partial" just before the caret, or null. */
export function openBraces(text, caret) {
  const m = /\{\{\s*([\w.]*)$/.exec(text.slice(0, caret));
  return m ? { start: m.index, partial: m[1] } : null;
}

/** Adds completion to `control` (input or textarea); returns the listbox, to place after it. */
export function completion(control, names) {
  const listId = uid("complete");
  const box = h("ul", { id: listId, role: "listbox", class: "complete", hidden: true,
    "aria-label": `Variables for ${control.name || "this field"}` });
  control.setAttribute("aria-autocomplete", "list");
  control.setAttribute("aria-controls", listId);
  let shown = [];
  let active = -1;
  let at = null;

  const close = () => {
    box.hidden = true;
    shown = [];
    active = -1;
    control.removeAttribute("aria-activedescendant");
  };
  const highlight = (i) => {
    active = i;
    [...box.children].forEach((li, j) => li.setAttribute("aria-selected", String(j === i)));
    if (i >= 0) control.setAttribute("aria-activedescendant", box.children[i].id);
  };
  const pick = (name) => {
    const caret = control.selectionStart ?? control.value.length;
    const text = `{{${name}}}`;
    // "}}" already typed after the caret is replaced too, not doubled.
    const end = control.value.slice(caret, caret + 2) === "}}" ? caret + 2 : caret;
    control.value = control.value.slice(0, at.start) + text + control.value.slice(end);
    const pos = at.start + text.length;
    control.setSelectionRange(pos, pos);
    close();
    control.dispatchEvent(new Event("input", { bubbles: true })); // the field's own handler saves it
  };
  const update = () => {
    at = openBraces(control.value, control.selectionStart ?? control.value.length);
    const p = at ? at.partial.toLowerCase() : "";
    shown = at ? names.filter((n) => n.toLowerCase().startsWith(p) && n.toLowerCase() !== p) : [];
    if (!shown.length) { close(); return; }
    box.replaceChildren(...shown.map((n) => h("li", { role: "option", id: uid("opt"), "aria-selected": "false",
      // mousedown, not click: the field must not lose focus before the pick.
      onmousedown: (ev) => { ev.preventDefault(); pick(n); } }, `{{${n}}}`)));
    box.hidden = false;
    highlight(0);
  };

  control.addEventListener("input", update);
  control.addEventListener("keydown", (ev) => {
    if (box.hidden) return;
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      const n = shown.length;
      highlight((active + (ev.key === "ArrowDown" ? 1 : n - 1)) % n);
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      pick(shown[Math.max(active, 0)]);
    } else if (ev.key === "Escape") {
      ev.preventDefault();
      ev.stopPropagation();
      close();
    }
  });
  control.addEventListener("blur", close);
  return box;
}
