// The canvas adapter: js/canvas.js drawing the store's definition, and what the mouse and keys
// do on it turned into the store's actions. Drawflow reports one gesture as several events
// (deleting a node also removes its connections): they are applied together, after its handler
// returns, as one undo step. Also the canvas's toolbar, where a new block goes, and where the
// focus goes when the block that had it is deleted.
import { createCanvas, NODE_H, NODE_W, positionsOf } from "../canvas.js";
import { button, h } from "../dom.js";
import { blocksOf, exitsOf, targetBlock } from "../graph.js";

/**
 * @typedef {import("./store.js").Store} Store
 * @typedef {import("./store.js").Change} Change
 * @typedef {import("./problems.js").Problems} Problems
 */

/** The block to focus once `gone` is deleted from `def`: one that led to it, else a neighbour. */
export function neighbourOf(def, gone) {
  const blocks = blocksOf(def);
  const into = Object.keys(blocks).find((id) => id !== gone && exitsOf(blocks[id]).some((e) => targetBlock(e.target) === gone));
  if (into) return into;
  const ids = Object.keys(blocks);
  const i = ids.indexOf(gone);
  return ids[i - 1] || ids[i + 1] || null;
}

/** Is a place of a NODE_W × NODE_H block free of the others? */
const free = (pos, at) => !Object.values(pos).some((p) => Math.abs(p.x - at.x) < NODE_W && Math.abs(p.y - at.y) < NODE_H + 30);

/**
 * Where a new block goes: right of `after` (the selected block) when there is one, else in the
 * part of the canvas in view, top left first; never on top of another block.
 * @param {any} def @param {string|null} after @param {{x0: number, y0: number, x1: number, y1: number}|null} view
 */
export function placeFor(def, after, view) {
  const pos = positionsOf(def);
  const prev = after && pos[after];
  if (prev) {
    const at = { x: prev.x + NODE_W + 80, y: prev.y };
    while (!free(pos, at)) at.y += 110;
    return at;
  }
  const area = view && Number.isFinite(view.x0) && view.x1 > view.x0
    ? view : { x0: 0, y0: 0, x1: 40 + Object.keys(pos).length * (NODE_W + 80), y1: 400 };
  const left = Math.round(area.x0 + 30), top = Math.round(area.y0 + 30);
  for (let x = left; x + NODE_W <= area.x1 || x === left; x += NODE_W + 40) {
    for (let y = top; y + NODE_H <= area.y1 || y === top; y += NODE_H + 40) {
      if (free(pos, { x, y })) return { x, y };
    }
  }
  const at = { x: left, y: top }; // a full view: below everything in it
  while (!free(pos, at)) at.y += 110;
  return at;
}

/** @param {{ store: Store, problems: Problems, rw: boolean }} env */
export function canvasView({ store, problems, rw }) {
  const box = h("div", { class: "canvas", role: "group", "aria-label": "Flow canvas" });
  const broken = h("p", { class: "error", role: "alert", hidden: true });
  /** @type {[string, Record<string, any>, string|null][]} */
  let pending = [];
  const queue = (name, payload, kind = null) => {
    pending.push([name, payload, kind]);
    if (pending.length > 1) return;
    queueMicrotask(() => {
      const batch = pending;
      pending = [];
      const deleting = batch.some(([, , k]) => k === "node");
      store.batch(batch.filter(([, , k]) => !(deleting && k === "edge")).map(([n, p]) => [n, p]), { form: true });
    });
  };
  const canvas = createCanvas(box, {
    editable: rw,
    onSelect: (id) => store.select(id),
    onConnect: (from, port, target) => queue("connect", { from, port, target }),
    onDisconnect: (from, port) => queue("connect", { from, port, target: undefined }, "edge"),
    onMove: (id, at) => queue("move", { id, at }),
    onDelete: (id) => queue("removeBlock", { id }, "node"),
  });
  const overlay = () => ({ problems: problems.byBlock(), selected: store.selected });
  function draw() {
    try {
      canvas.render(store.def, overlay());
      broken.hidden = true;
    } catch (err) { // a definition the canvas cannot draw: the page, its JSON and its problems stay
      broken.hidden = false;
      broken.textContent = `The canvas cannot draw this definition (${err.message}): edit it in the JSON below.`;
    }
  }
  store.subscribe((change) => {
    if (change.name === "select") { canvas.mark(overlay()); return; }
    draw();
    refocus(change);
  });
  problems.subscribe(() => canvas.mark(overlay()));

  /** A deleted block's node or form button had the focus: it goes to a neighbour's node. @param {Change} change */
  function refocus(change) {
    const gone = change.steps.filter(([n]) => n === "removeBlock").map(([, p]) => p.id);
    if (!gone.length) return;
    const next = neighbourOf(change.before, gone[0]);
    // After every view has drawn this change (the form is drawn after the canvas).
    queueMicrotask(() => {
      const lost = !document.activeElement || document.activeElement === document.body;
      if (lost && !(next && canvas.focus(next))) box.closest("article")?.querySelector(".palette button")?.focus();
    });
  }

  const toolbar = h("div", { class: "canvas-tools", role: "toolbar", "aria-label": "Canvas" },
    button("Zoom in", () => canvas.zoom(1)), button("Zoom out", () => canvas.zoom(-1)), button("Reset zoom", () => canvas.zoom(0)),
    button("Fit", () => canvas.fit(), { "aria-label": "Fit the flow in view" }),
    rw ? button("Layout", () => { store.dispatch("layout"); canvas.fit(); }) : null);
  return {
    el: [toolbar, broken, box],
    fit: () => canvas.fit(),
    /** Where a block added now goes. */
    place: () => placeFor(store.def, store.selected, box.isConnected ? canvas.visibleArea() : null),
  };
}
