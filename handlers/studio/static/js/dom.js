// Building the page from data without ever parsing data as HTML: text goes in as text nodes
// (Node.append / textContent), attributes through setAttribute; HTML is never parsed.

const PROPS = new Set(["value", "checked", "selected", "disabled", "hidden"]);

function set(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.setAttribute("class", v);
    else if (PROPS.has(k)) el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function fill(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** h("a", {href: "#/x"}, "text", child) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  set(el, attrs);
  return fill(el, children);
}

const SVG = "http://www.w3.org/2000/svg";

export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  set(el, attrs);
  return fill(el, children);
}

export function clear(el, ...children) {
  el.replaceChildren();
  return fill(el, children);
}

let uid = 0;
export function id(prefix) { uid += 1; return `${prefix}-${uid}`; }

/** A labelled form control: <label for>…</label> + control. */
export function field(label, control, hint) {
  const cid = control.id || id("f");
  control.id = cid;
  const hintEl = hint ? h("small", { id: `${cid}-hint`, class: "hint" }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: cid }, label), control, hintEl);
}

export function table(caption, headers, rows, empty) {
  if (!rows.length) return h("p", { class: "empty" }, empty || "Nothing here yet.");
  return h("table", {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows));
}

export function button(label, onclick, attrs = {}) {
  return h("button", { type: "button", ...attrs, onclick }, label);
}

export function when(ms) {
  if (!ms) return "—";
  const d = typeof ms === "number" ? new Date(ms) : new Date(String(ms));
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString().replace("T", " ").slice(0, 19);
}

export function pct(x) { return `${Math.round((Number(x) || 0) * 1000) / 10}%`; }

export function json(value) { return JSON.stringify(value, null, 2); }
