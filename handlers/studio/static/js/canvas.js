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

/**
 * createCanvas(container, options) → { render(def, overlay), mark(overlay), zoom(dir), fit(), destroy() }
 * options: editable; onSelect(blockId|null); onConnect(fromId, port, target);
 * onDisconnect(fromId, port); onMove(blockId, {x, y}); onDelete(blockId).
 * overlay: problems (Map blockId → messages), selected, status ({blockId: {status, ms}}: a run's; a
 * block without one did not run), path ([blockIds]).
 */
export function createCanvas(container, options = {}) {
  const Drawflow = globalThis.Drawflow;
  // Focusable by a click (not by Tab: the nodes are), because Drawflow hears Delete only on its
  // container: a clicked edge gets no focus of its own, so the key would go nowhere.
  const surface = h("div", { class: "canvas-surface", tabindex: "-1" });
  container.replaceChildren(surface);
  const editor = new Drawflow(surface);
  editor.reroute = false;
  editor.editor_mode = options.editable ? "edit" : "view";
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

  let rendering = false;
  let byNode = {}; // Drawflow node id → {block} or {exit: target}
  let byBlock = {};
  const quiet = (fn) => (...args) => { if (!rendering) fn(...args); };
  const port = (cls) => Number(String(cls).replace("output_", "")) - 1;

  editor.on("connectionCreated", quiet((c) => {
    const from = byNode[c.output_id], to = byNode[c.input_id];
    if (!from || !to || !from.block) return;
    const target = to.block ? { type: "block", blockId: to.block } : to.exit;
    options.onConnect && options.onConnect(from.block, port(c.output_class), target);
  }));
  editor.on("connectionRemoved", quiet((c) => {
    const from = byNode[c.output_id];
    if (from && from.block && options.onDisconnect) options.onDisconnect(from.block, port(c.output_class));
  }));
  // Drawflow's mousedown keeps the focus where it was (a text field, say): move it here, so
  // Delete reaches Drawflow and not the field.
  editor.on("connectionSelected", () => surface.focus({ preventScroll: true }));
  editor.on("nodeMoved", quiet((nid) => {
    const n = editor.getNodeFromId(nid), at = byNode[nid];
    if (at && at.block && options.onMove) options.onMove(at.block, { x: Math.round(n.pos_x), y: Math.round(n.pos_y) });
  }));
  editor.on("nodeRemoved", quiet((nid) => {
    const at = byNode[nid];
    if (at && at.block && options.onDelete) options.onDelete(at.block);
  }));

  function label(conn, text, key) {
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

  // A block node's name, problem badge, selection and (on a run) whether it ran: all that
  // `mark` may change on a node as drawn.
  function decorate(el, id, type, start, overlay) {
    const bad = (overlay.problems || new Map()).get(id) || [];
    const st = (overlay.status || {})[id];
    const ran = st ? `, ${st.status}${st.ms !== undefined ? `, ${st.ms} ms` : ""}` : "";
    el.setAttribute("aria-label",
      `${start ? "start: " : ""}block ${id} (${type})${bad.length ? `, ${bad.length} problem(s)` : ""}${ran}`);
    el.classList.toggle("not-run", Boolean(overlay.status) && !st); // a run's block it never reached
    el.classList.toggle("problem", bad.length > 0);
    el.classList.toggle("chosen", overlay.selected === id);
    el.setAttribute("aria-pressed", String(overlay.selected === id)); // the open block, for a screen reader too
    const content = el.querySelector(".drawflow_content_node");
    for (const old of content.querySelectorAll(".node-badge")) old.remove();
    if (bad.length) content.append(h("span", { class: "node-badge", title: bad.join("\n"), "aria-hidden": "true" }, String(bad.length)));
  }

  let drawn = null; // the definition the nodes on screen show
  /**
   * New problems and selection for the definition already drawn, on its nodes as they are: a
   * shape check answers while the mouse may be dragging one, and a redraw would drop it (and,
   * on a run's drawing, the user's pan and zoom).
   */
  function mark(overlay = {}) {
    if (!drawn) return;
    const blocks = blocksOf(drawn);
    for (const [id, nid] of Object.entries(byBlock)) {
      const el = surface.querySelector(`#node-${nid}`);
      const type = String((blocks[id] && blocks[id].type) || "?");
      if (el) decorate(el, id, type, drawn.onboardingBlockId === id, overlay);
    }
  }

  function render(def, overlay = {}) {
    rendering = true;
    drawn = def;
    try {
      editor.clear();
      editor.node_selected = null; // the old elements are gone; Delete must not reach them
      editor.connection_selected = null;
      byNode = {};
      byBlock = {};
      const blocks = blocksOf(def);
      const pos = positionsOf(def);
      const status = overlay.status || {};
      for (const [id, b] of Object.entries(blocks)) {
        const outs = exitsOf(b);
        const p = pos[id];
        const type = String((b && b.type) || "?");
        const start = def.onboardingBlockId === id;
        const nid = editor.addNode(type, 1, outs.length, p.x, p.y, `block type-${type}`, {}, "", false);
        byNode[nid] = { block: id };
        byBlock[id] = nid;
        const el = surface.querySelector(`#node-${nid}`);
        const st = status[id];
        el.setAttribute("data-block", id);
        el.setAttribute("tabindex", "0");
        el.setAttribute("role", "button");
        if (start) el.classList.add("start");
        if (st) el.classList.add(`status-${st.status}`);
        el.querySelector(".drawflow_content_node").append(...[
          h("span", { class: "node-title" }, `${start ? "▶ " : ""}${(b && b.title) || id}`),
          h("span", { class: "node-type" }, (b && b.title) ? `${type} · ${id}` : type),
          st && st.ms !== undefined ? h("span", { class: "node-ms" }, `${st.ms} ms`) : null,
        ].filter(Boolean));
        decorate(el, id, type, start, overlay);
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
      // Exits: every target that is not a block of this tool is a terminal node.
      const taken = Object.values(pos).map((q) => ({ ...q }));
      for (const [id, b] of Object.entries(blocks)) {
        exitsOf(b).forEach((o, i) => {
          const to = targetBlock(o.target);
          if (to in blocks) {
            editor.addConnection(byBlock[id], byBlock[to], `output_${i + 1}`, "input_1");
            return;
          }
          const p = pos[id];
          const at = { x: p.x + NODE_W + 70, y: p.y + i * (NODE_H - 10) };
          // An exit never covers a block or another exit: it steps down until the place is free.
          while (taken.some((q) => Math.abs(q.x - at.x) < NODE_W && Math.abs(q.y - at.y) < NODE_H)) at.y += NODE_H + 10;
          taken.push(at);
          const nid = editor.addNode("exit", 1, 0, at.x, at.y, "exit", {}, "", false);
          byNode[nid] = { exit: o.target && o.target.type !== "block" ? o.target : null };
          const el = surface.querySelector(`#node-${nid}`);
          const name = exitName(o.target);
          el.setAttribute("data-exit", name);
          el.setAttribute("aria-label", `exit: ${name}`);
          el.querySelector(".drawflow_content_node").append(h("span", { class: "node-title" }, "exit"), h("span", { class: "node-type" }, name));
          editor.addConnection(byBlock[id], nid, `output_${i + 1}`, "input_1");
        });
      }
      const path = overlay.path || [];
      for (const conn of surface.querySelectorAll("svg.connection")) {
        const outId = [...conn.classList].find((c) => c.startsWith("node_out_node-")).slice(14);
        const inId = [...conn.classList].find((c) => c.startsWith("node_in_node-")).slice(13);
        const outCls = [...conn.classList].find((c) => c.startsWith("output_"));
        const from = byNode[outId] && byNode[outId].block;
        const o = exitsOf(blocks[from])[port(outCls)];
        if (!o) continue;
        conn.setAttribute("data-from", from);
        conn.setAttribute("data-to", (byNode[inId] && byNode[inId].block) || "exit");
        conn.setAttribute("data-label", o.label);
        if (o.port === 0) conn.classList.add("default");
        const i = path.indexOf(from);
        if (i >= 0 && path[i + 1] === (byNode[inId] && byNode[inId].block)) conn.classList.add("on-path");
        label(conn, o.label, `edge-${outId}-${outCls}`);
      }
    } finally {
      rendering = false;
    }
  }

  return {
    render,
    mark,
    zoom(dir) { if (dir > 0) editor.zoom_in(); else if (dir < 0) editor.zoom_out(); else editor.zoom_reset(); },
    fit: () => fitView(editor, surface),
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
