// The drawing of a definition: blocks as nodes laid out by distance from the onboarding
// block, outputConditions and defaultOutput as labelled edges, targets outside the tree as exits.
import { s } from "./dom.js";

const W = 170, H = 52, GX = 90, GY = 40, PAD = 20;

/** Nodes, edges and exits of a definition (pure; no DOM). */
export function graph(def) {
  const blocks = (def && typeof def.blocks === "object" && def.blocks) || {};
  const ids = Object.keys(blocks);
  const edges = [];
  const exits = [];
  for (const from of ids) {
    const b = blocks[from] || {};
    const outs = [];
    for (const c of Array.isArray(b.outputConditions) ? b.outputConditions : []) {
      outs.push([String((c && c.id) || "condition"), c && c.target]);
    }
    if (b.type !== "return") outs.push(["default", b.defaultOutput]);
    for (const [label, target] of outs) {
      if (target && target.type === "block" && target.blockId in blocks) {
        edges.push({ from, to: target.blockId, label });
      } else {
        const name = !target ? "missing target" : target.type === "block" ? `no block ${target.blockId}` : target.type;
        const exit = `exit:${from}:${label}`;
        exits.push({ id: exit, name: String(name) });
        edges.push({ from, to: exit, label, exit: true });
      }
    }
  }
  // Columns: breadth-first distance from the onboarding block; unreachable blocks last.
  const level = {};
  const start = def && def.onboardingBlockId;
  const queue = start in blocks ? [start] : [];
  if (queue.length) level[start] = 0;
  while (queue.length) {
    const at = queue.shift();
    for (const e of edges) if (e.from === at && !e.exit && !(e.to in level)) { level[e.to] = level[at] + 1; queue.push(e.to); }
  }
  const deepest = Math.max(-1, ...Object.values(level));
  for (const id of ids) if (!(id in level)) level[id] = deepest + 1;
  for (const x of exits) {
    const from = edges.find((e) => e.to === x.id).from;
    level[x.id] = level[from] + 1;
  }
  const rows = {};
  const pos = {};
  for (const id of [...ids, ...exits.map((x) => x.id)]) {
    const col = level[id];
    rows[col] = (rows[col] || 0) + 1;
    pos[id] = { x: PAD + col * (W + GX), y: PAD + (rows[col] - 1) * (H + GY) };
  }
  const nodes = ids.map((id) => ({ id, type: String((blocks[id] || {}).type || "?"), title: (blocks[id] || {}).title, start: id === start }));
  return { nodes, exits, edges, pos };
}

function box(x, y, cls, lines, label, attrs = {}) {
  return s("g", { class: cls, role: "listitem", "aria-label": label, ...attrs },
    s("title", {}, label),
    s("rect", { x, y, width: W, height: H, rx: 8 }),
    lines.map((t, i) => s("text", { x: x + 10, y: y + 20 + i * 18, class: i ? "sub" : "" }, clip(t))));
}

function clip(t) { t = String(t ?? ""); return t.length > 22 ? `${t.slice(0, 21)}…` : t; }

/** Redraws `svg` in place for `def`; `problems` mark the blocks they name. */
export function draw(svg, def, problems = []) {
  const g = graph(def);
  const bad = new Set();
  for (const p of problems) {
    const m = String(p.path || "").match(/(?:^|\.)blocks\.([^.]+)/);
    if (m) bad.add(m[1]);
  }
  const parts = [s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
    s("path", { d: "M 0 0 L 10 5 L 0 10 z" })))];
  for (const e of g.edges) {
    const a = g.pos[e.from], b = g.pos[e.to];
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    const back = x2 <= x1;
    const d = back
      ? `M ${x1} ${y1} C ${x1 + 60} ${y1 + 70}, ${x2 - 60} ${y2 + 70}, ${x2} ${y2}`
      : `M ${x1} ${y1} C ${x1 + GX / 2} ${y1}, ${x2 - GX / 2} ${y2}, ${x2} ${y2}`;
    parts.push(s("g", { class: `edge${e.label === "default" ? " default" : ""}`, "data-from": e.from, "data-to": e.to },
      s("path", { d, "marker-end": "url(#arrow)" }),
      s("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 6 + (back ? 50 : 0), "text-anchor": "middle" }, clip(e.label))));
  }
  const items = [];
  for (const n of g.nodes) {
    const p = g.pos[n.id];
    const cls = `node type-${n.type}${n.start ? " start" : ""}${bad.has(n.id) ? " problem" : ""}`;
    const label = `${n.start ? "start: " : ""}block ${n.id} (${n.type})${bad.has(n.id) ? ", has problems" : ""}`;
    items.push(box(p.x, p.y, cls, [`${n.start ? "▶ " : ""}${n.title || n.id}`, n.type], label, { "data-block": n.id }));
  }
  for (const x of g.exits) {
    const p = g.pos[x.id];
    items.push(box(p.x, p.y, "exit", ["exit", x.name], `exit: ${x.name}`, { "data-exit": x.name }));
  }
  parts.push(s("g", { role: "list", "aria-label": "Blocks" }, items));
  const cols = Math.max(1, ...Object.values(g.pos).map((p) => p.x)) + W + PAD;
  const height = Math.max(1, ...Object.values(g.pos).map((p) => p.y)) + H + PAD + 60;
  svg.setAttribute("viewBox", `0 0 ${cols} ${height}`);
  svg.setAttribute("width", String(cols));
  svg.setAttribute("height", String(height));
  svg.replaceChildren(...parts);
  return g;
}
