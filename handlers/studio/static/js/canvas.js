// The canvas: a definition's blocks as nodes at meta.positions, drawn and edited with Drawflow
// (vendor/drawflow, loaded as a classic script: it sets globalThis.Drawflow), laid out with dagre.
// The definition stays the only truth: every render clears the editor and draws it again, and
// what the mouse or keyboard does comes back as callbacks the caller applies to the definition.
// Reused read-only by the run page: createCanvas(el, { editable: false }).render(def, { status, path }).
import { layout as dagreLayout, graphlib } from "../vendor/dagre/dagre.esm.js";
import { h } from "./dom.js";
import { blocksOf, exitsOf, targetBlock } from "./graph.js";

export const NODE_W = 200, NODE_H = 70;
const SVG = "http://www.w3.org/2000/svg";

/** Top-left positions for every block, by dagre (left to right), ignoring kept positions. */
export function autoLayout(def) {
  const blocks = blocksOf(def);
  const g = new graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 50, ranksep: 150, marginx: 30, marginy: 30 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const id of Object.keys(blocks)) g.setNode(id, { width: NODE_W, height: NODE_H });
  for (const [id, b] of Object.entries(blocks)) {
    for (const e of exitsOf(b)) {
      const to = targetBlock(e.target);
      if (to in blocks) g.setEdge(id, to);
    }
  }
  dagreLayout(g);
  const out = {};
  for (const id of g.nodes()) {
    const n = g.node(id);
    out[id] = { x: Math.round(n.x - NODE_W / 2), y: Math.round(n.y - NODE_H / 2) };
  }
  return out;
}

/** Kept positions (meta.positions), with a layout for the blocks that have none. */
export function positionsOf(def) {
  const kept = (def && def.meta && typeof def.meta.positions === "object" && def.meta.positions) || {};
  const ids = Object.keys(blocksOf(def));
  const good = (p) => p && Number.isFinite(p.x) && Number.isFinite(p.y);
  if (ids.every((id) => good(kept[id]))) return Object.fromEntries(ids.map((id) => [id, kept[id]]));
  const auto = autoLayout(def);
  return Object.fromEntries(ids.map((id) => [id, good(kept[id]) ? kept[id] : auto[id]]));
}

function exitName(target) {
  if (!target || typeof target !== "object") return "no next block";
  if (target.type === "block") return `missing block ${target.blockId}`;
  return String(target.type || "?");
}

/** A class name from any string: a block type may hold spaces or tabs (it is data). @param {string} text */
function token(text) { return String(text).replace(/[^A-Za-z0-9_-]/g, "_"); }

/**
 * @typedef {object} Overlay  what is drawn over the definition
 * @property {Map<string, string[]>} [problems]  messages by block id
 * @property {string|null} [selected]  the open block
 * @property {Record<string, {status: string, ms?: number}>} [status]  a run's, by block (a block without one did not run)
 * @property {string[]} [path]  the block ids in the order they ran
 * @typedef {object} CanvasOptions
 * @property {boolean} [editable]
 * @property {(blockId: string) => void} [onSelect]
 * @property {(fromId: string, port: number, target: any) => void} [onConnect]
 * @property {(fromId: string, port: number) => void} [onDisconnect]
 * @property {(blockId: string, at: {x: number, y: number}) => void} [onMove]
 * @property {(blockId: string) => void} [onDelete]
 * @typedef {object} Drawn  the nodes on screen: Drawflow node id → {block} or {exit: target}, block id → node id
 * @property {Record<string, {block?: string, exit?: any}>} byNode
 * @property {Record<string, number>} byBlock
 * @property {any} def  the definition they show
 * @property {boolean} rendering  true while render() adds them (Drawflow's events are ours then)
 */

/** Drawflow on `surface`, in edit or view mode. */
function startEditor(surface, editable) {
  const editor = new globalThis.Drawflow(surface);
  editor.reroute = false;
  editor.editor_mode = editable ? "edit" : "view";
  editor.zoom_min = 0.3;
  editor.force_first_input = true; // a connection dropped anywhere on a node connects to it
  // A node the canvas redrew while the mouse held it (a drag begun just as an edit re-rendered)
  // is let go: Drawflow would write the position of a node it no longer has, and throw.
  const held = (ed) => ed.drag && ed.ele_selected && !ed.ele_selected.isConnected;
  for (const name of ["position", "dragEnd"]) {
    const original = editor[name];
    editor[name] = function (e) {
      if (held(this)) { this.drag = false; this.ele_selected = null; return undefined; }
      return original.call(this, e);
    };
  }
  editor.start();
  return editor;
}

const port = (cls) => Number(String(cls).replace("output_", "")) - 1;

/** Drawflow's events as the options' callbacks, in block ids (never while render() draws). */
function listen(editor, surface, drawn, options) {
  const quiet = (fn) => (...args) => { if (!drawn.rendering) fn(...args); };
  editor.on("connectionCreated", quiet((c) => {
    const from = drawn.byNode[c.output_id], to = drawn.byNode[c.input_id];
    if (!from || !to || !from.block) return;
    const target = to.block ? { type: "block", blockId: to.block } : to.exit;
    options.onConnect && options.onConnect(from.block, port(c.output_class), target);
  }));
  editor.on("connectionRemoved", quiet((c) => {
    const from = drawn.byNode[c.output_id];
    if (from && from.block && options.onDisconnect) options.onDisconnect(from.block, port(c.output_class));
  }));
  // Drawflow's mousedown keeps the focus where it was (a text field, say): move it here, so
  // Delete reaches Drawflow and not the field.
  editor.on("connectionSelected", () => surface.focus({ preventScroll: true }));
  editor.on("nodeMoved", quiet((nid) => {
    const n = editor.getNodeFromId(nid), at = drawn.byNode[nid];
    if (at && at.block && options.onMove) options.onMove(at.block, { x: Math.round(n.pos_x), y: Math.round(n.pos_y) });
  }));
  editor.on("nodeRemoved", quiet((nid) => {
    const at = drawn.byNode[nid];
    if (at && at.block && options.onDelete) options.onDelete(at.block);
  }));
}

function edgeLabel(conn, text, key) {
  const path = conn.querySelector("path");
  if (!path) return;
  path.id = key;
  const t = document.createElementNS(SVG, "text");
  t.setAttribute("class", "edge-label");
  t.setAttribute("dy", "-4");
  const tp = document.createElementNS(SVG, "textPath");
  tp.setAttribute("href", `#${key}`);
  tp.setAttribute("startOffset", "50%");
  tp.setAttribute("text-anchor", "middle");
  tp.textContent = text;
  t.append(tp);
  conn.append(t);
}

/**
 * A block node's name, problem badge, selection and (on a run) whether it ran: all that
 * `mark` may change on a node as drawn. @param {HTMLElement} el @param {Overlay} overlay
 */
function decorate(el, id, b, start, overlay) {
  const bad = (overlay.problems || new Map()).get(id) || [];
  const st = (overlay.status || {})[id];
  // The name holds what the node shows, in the same order (id, type, title, status), so voice
  // control and a search by the visible text find it: "start: block s (executeScript) Greet, ok, 41 ms".
  const title = b && b.title ? ` ${b.title}` : "";
  el.setAttribute("aria-label", `${start ? "start: " : ""}block ${id} (${typeOf(b)})${title}`
    + `${bad.length ? `, ${bad.length} problem(s)` : ""}${st ? `, ${ranText(st)}` : ""}`);
  el.classList.toggle("not-run", Boolean(overlay.status) && !st); // a run's block it never reached
  el.classList.toggle("problem", bad.length > 0);
  el.classList.toggle("chosen", overlay.selected === id);
  el.setAttribute("aria-pressed", String(overlay.selected === id)); // the open block, for a screen reader too
  const content = el.querySelector(".drawflow_content_node");
  for (const old of content.querySelectorAll(".node-badge")) old.remove();
  if (bad.length) content.append(h("span", { class: "node-badge", title: bad.join("\n"), "aria-hidden": "true" }, ` ${bad.length}`));
}

/** One block's node: its title, type, duration on a run, ports, and what a click or a key does. */
function drawBlock(ctx, id, b, at, overlay) {
  const { editor, surface, drawn, options } = ctx;
  const outs = exitsOf(b);
  const type = typeOf(b);
  const start = drawn.def.onboardingBlockId === id;
  const nid = editor.addNode(type, 1, outs.length, at.x, at.y, `block type-${token(type)}`, {}, "", false);
  drawn.byNode[nid] = { block: id };
  drawn.byBlock[id] = nid;
  const el = surface.querySelector(`#node-${nid}`);
  const st = (overlay.status || {})[id];
  el.setAttribute("data-block", id);
  el.setAttribute("tabindex", "0");
  el.setAttribute("role", "button");
  if (start) el.classList.add("start");
  if (st) el.classList.add(`status-${token(st.status)}`);
  el.querySelector(".drawflow_content_node").append(...nodeText(id, b, start, st));
  decorate(el, id, b, start, overlay);
  outs.forEach((o, i) => {
    const out = el.querySelector(`.output_${i + 1}`);
    if (out) { out.setAttribute("data-label", o.label); out.setAttribute("title", `${o.label}: drag to the next block`); }
  });
  el.addEventListener("click", (ev) => {
    if (!ev.target.classList.contains("output") && options.onSelect) options.onSelect(id);
  });
  el.addEventListener("keydown", (ev) => {
    if (ev.target !== el) return;
    if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); options.onSelect && options.onSelect(id); }
    if (options.editable && ev.key === "Delete" && options.onDelete) { ev.preventDefault(); options.onDelete(id); }
  });
}

const typeOf = (b) => String((b && b.type) || "?");

/** A run's status of a block: "ok, 41 ms". */
const ranText = (st) => `${st.status}${st.ms !== undefined ? `, ${st.ms} ms` : ""}`;

/** What a node shows: its id, its type, its title, and on a run its status and duration (words, not only a colour). */
function nodeText(id, b, start, st) {
  return [
    h("span", { class: "node-title" }, `${start ? "▶ " : ""}${id}`), " ",
    h("span", { class: "node-type" }, `(${typeOf(b)})`),
    b && b.title ? [" ", h("span", { class: "node-caption" }, b.title)] : [],
    st ? [" ", h("span", { class: "node-ms" }, ranText(st))] : [],
  ].flat();
}

/** Every edge of `id`: to its target block, or to a terminal exit node placed beside it. */
function drawExits(ctx, id, b, pos, taken) {
  const { editor, surface, drawn } = ctx;
  const blocks = blocksOf(drawn.def);
  exitsOf(b).forEach((o, i) => {
    const to = targetBlock(o.target);
    if (to in blocks) {
      editor.addConnection(drawn.byBlock[id], drawn.byBlock[to], `output_${i + 1}`, "input_1");
      return;
    }
    const p = pos[id];
    const at = { x: p.x + NODE_W + 70, y: p.y + i * (NODE_H - 10) };
    // An exit never covers a block or another exit: it steps down until the place is free.
    while (taken.some((q) => Math.abs(q.x - at.x) < NODE_W && Math.abs(q.y - at.y) < NODE_H)) at.y += NODE_H + 10;
    taken.push(at);
    const nid = editor.addNode("exit", 1, 0, at.x, at.y, "exit", {}, "", false);
    drawn.byNode[nid] = { exit: o.target && o.target.type !== "block" ? o.target : null };
    const el = surface.querySelector(`#node-${nid}`);
    const name = exitName(o.target);
    el.setAttribute("data-exit", name);
    el.setAttribute("aria-label", `exit: ${name}`);
    el.querySelector(".drawflow_content_node").append(h("span", { class: "node-title" }, "exit"), h("span", { class: "node-type" }, name));
    editor.addConnection(drawn.byBlock[id], nid, `output_${i + 1}`, "input_1");
  });
}

/** Each edge's ends, label and whether the run took it, as attributes and an SVG label. */
function markEdges(surface, drawn, path) {
  const blocks = blocksOf(drawn.def);
  for (const conn of surface.querySelectorAll("svg.connection")) {
    const classes = [...conn.classList];
    const outId = classes.find((c) => c.startsWith("node_out_node-")).slice(14);
    const inId = classes.find((c) => c.startsWith("node_in_node-")).slice(13);
    const outCls = classes.find((c) => c.startsWith("output_"));
    const from = drawn.byNode[outId] && drawn.byNode[outId].block;
    const o = exitsOf(blocks[from])[port(outCls)];
    if (!o) continue;
    const to = drawn.byNode[inId] && drawn.byNode[inId].block;
    conn.setAttribute("data-from", from);
    conn.setAttribute("data-to", to || "exit");
    conn.setAttribute("data-label", o.label);
    if (o.port === 0) conn.classList.add("default");
    const i = path.indexOf(from);
    if (i >= 0 && path[i + 1] === to) conn.classList.add("on-path");
    edgeLabel(conn, o.label, `edge-${outId}-${outCls}`);
  }
}

/**
 * createCanvas(container, options) → { render(def, overlay), mark(overlay), zoom(dir), fit(),
 * visibleArea(), focus(blockId), destroy() }: the definition drawn with Drawflow; what the mouse
 * and keys do comes back as the options' callbacks, in block ids.
 * @param {HTMLElement} container @param {CanvasOptions} [options]
 */
export function createCanvas(container, options = {}) {
  // Focusable by a click (not by Tab: the nodes are), because Drawflow hears Delete only on its
  // container: a clicked edge gets no focus of its own, so the key would go nowhere.
  const surface = h("div", { class: "canvas-surface", tabindex: "-1" });
  container.replaceChildren(surface);
  const editor = startEditor(surface, options.editable);
  /** @type {Drawn} */
  const drawn = { byNode: {}, byBlock: {}, def: null, rendering: false };
  listen(editor, surface, drawn, options);
  const nodeOf = (id) => (id in drawn.byBlock ? surface.querySelector(`#node-${drawn.byBlock[id]}`) : null);

  /**
   * New problems and selection for the definition already drawn, on its nodes as they are: a
   * shape check answers while the mouse may be dragging one, and a redraw would drop it (and,
   * on a run's drawing, the user's pan and zoom). @param {Overlay} overlay
   */
  function mark(overlay = {}) {
    if (!drawn.def) return;
    const blocks = blocksOf(drawn.def);
    for (const id of Object.keys(drawn.byBlock)) {
      const el = nodeOf(id);
      if (el) decorate(el, id, blocks[id], drawn.def.onboardingBlockId === id, overlay);
    }
  }

  /** @param {any} def @param {Overlay} overlay */
  function render(def, overlay = {}) {
    drawn.rendering = true;
    try {
      editor.clear();
      editor.node_selected = null; // the old elements are gone; Delete must not reach them
      editor.connection_selected = null;
      Object.assign(drawn, { byNode: {}, byBlock: {}, def });
      const blocks = blocksOf(def);
      const pos = positionsOf(def);
      const ctx = { editor, surface, drawn, options };
      for (const [id, b] of Object.entries(blocks)) drawBlock(ctx, id, b, pos[id], overlay);
      const taken = Object.values(pos).map((q) => ({ ...q }));
      for (const [id, b] of Object.entries(blocks)) drawExits(ctx, id, b, pos, taken);
      markEdges(surface, drawn, overlay.path || []);
    } finally {
      drawn.rendering = false;
    }
  }

  return {
    render,
    mark,
    zoom(dir) { if (dir > 0) editor.zoom_in(); else if (dir < 0) editor.zoom_out(); else editor.zoom_reset(); },
    fit: () => fitView(editor, surface),
    visibleArea: () => visibleArea(editor),
    /** Focuses block `id`'s node; false when it is not drawn. @param {string} id */
    focus(id) { const el = nodeOf(id); if (el) el.focus(); return Boolean(el); },
    destroy() { editor.clear(); container.replaceChildren(); },
    editor,
  };
}

/**
 * A run's trace as a canvas overlay: each block's last status ({status: ok|error, ms}, the
 * durations of its runs added up, as a loop runs a block more than once) and the path taken,
 * in order. Works on the history's steps and on a test run's trace alike (both are LogEntries).
 */
export function runOverlay(steps) {
  const status = {}, path = [];
  for (const st of steps || []) {
    if (!st || st.type !== "block" || !st.blockId) continue;
    const prev = status[st.blockId];
    status[st.blockId] = { status: st.ok ? "ok" : "error", ms: (prev ? prev.ms : 0) + (Number(st.durationMs) || 0) };
    path.push(st.blockId);
  }
  return { status, path };
}

/**
 * A read-only drawing of a run: status and duration per block ({ok|error, ms}), the path taken
 * highlighted (including the edge to the exit it ended at, when `lastExit` names its label),
 * blocks that did not run dimmed. options.onSelect(blockId) opens a node.
 */
export function showRun(container, def, status = {}, path = [], options = {}) {
  const c = createCanvas(container, { editable: false, onSelect: options.onSelect });
  c.render(def, { status, path, selected: options.selected });
  const last = path[path.length - 1];
  if (last !== undefined && options.lastExit) {
    for (const conn of container.querySelectorAll("svg.connection[data-to=\"exit\"]")) {
      if (conn.getAttribute("data-from") === last && conn.getAttribute("data-label") === options.lastExit) conn.classList.add("on-path");
    }
  }
  return c;
}

/**
 * Zooms out (never in beyond 100%) and pans so every node is in view, the top-left one near the
 * corner. Drawflow scales its canvas around the canvas's centre (its transform-origin), so the
 * pan is worked out from the centre too.
 */
export function fitView(editor, surface, margin = 24) {
  const nodes = [...surface.querySelectorAll(".drawflow-node")];
  const pre = editor.precanvas;
  if (!nodes.length || !pre.clientWidth) return;
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const n of nodes) {
    const x = parseFloat(n.style.left) || 0, y = parseFloat(n.style.top) || 0;
    [x0, y0, x1, y1] = [Math.min(x0, x), Math.min(y0, y), Math.max(x1, x + n.offsetWidth), Math.max(y1, y + n.offsetHeight)];
  }
  const [w, hgt] = [pre.clientWidth, pre.clientHeight];
  const z = Math.max(editor.zoom_min, Math.min(1, (w - 2 * margin) / (x1 - x0 || 1), (hgt - 2 * margin) / (y1 - y0 || 1)));
  editor.zoom = z;
  editor.zoom_last_value = z;
  editor.canvas_x = margin - w / 2 - (x0 - w / 2) * z;
  editor.canvas_y = margin - hgt / 2 - (y0 - hgt / 2) * z;
  pre.style.transform = `translate(${editor.canvas_x}px, ${editor.canvas_y}px) scale(${z})`;
  editor.dispatch("zoom", z);
}

/**
 * The part of the canvas in view, in canvas pixels (the coordinates of meta.positions).
 * Drawflow draws canvas point x at (x - w/2) * zoom + w/2 + canvas_x, scaling round the centre.
 */
export function visibleArea(editor) {
  const pre = editor.precanvas;
  const [w, hgt, z] = [pre.clientWidth, pre.clientHeight, editor.zoom || 1];
  const at = (sx, sy) => ({ x: (sx - w / 2 - editor.canvas_x) / z + w / 2, y: (sy - hgt / 2 - editor.canvas_y) / z + hgt / 2 });
  const [a, b] = [at(0, 0), at(w, hgt)];
  return { x0: a.x, y0: a.y, x1: b.x, y1: b.y };
}
