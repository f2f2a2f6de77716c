// The builder's one state store: the definition, the selected block, and the undo stack. Every
// change goes through a named action (ACTIONS below): the store clones the definition, applies
// the action, records the result on the undo stack under the action's name, and tells the
// subscribers (the canvas, the form, the JSON, the panels) what happened. Nothing else writes
// the definition, so the views can never disagree with it for longer than one notification.
import { autoLayout, positionsOf } from "../canvas.js";
import { json } from "../dom.js";
import { exitsOf } from "../graph.js";
import { history as makeHistory } from "../history.js";

/**
 * @typedef {Record<string, any>} Definition  a tool's definition (docs/spec.md)
 * @typedef {[string, Record<string, any>]} Step  an action's name and its payload
 * @typedef {object} Change  what subscribers are told after each step
 * @property {string} name  the action ("addBlock", "undo", "select", "load", …)
 * @property {Step[]} steps  the actions applied (empty for select, undo, redo and load)
 * @property {Definition} before  the definition before the change
 * @property {string|null} from  the view the change came from ("json"), so it is not rewritten
 * @property {boolean} form  the block form must be drawn again even while it has the focus
 * @typedef {(change: Change) => void} Listener
 */

/** @param {Definition} d */
function meta(d) { return d.meta || {}; }

/** @param {Definition} d @param {Record<string, {x: number, y: number}>} extra */
function keepPositions(d, base, extra) {
  d.meta = { ...meta(d), positions: { ...base, ...(meta(d).positions || {}), ...extra } };
}

/**
 * The actions: each changes the clone `d` in place and may return `{ select }` to change the
 * selection with it. `state.selected` is the selection before the action.
 * @type {Record<string, (d: Definition, p: Record<string, any>, state: {selected: string|null}) => ({select?: string|null}|void)>}
 */
export const ACTIONS = {
  addBlock(d, { id, block, at, after }) {
    keepPositions(d, positionsOf(d), { [id]: at }); // every block's place, so nothing jumps
    d.blocks[id] = block;
    if (!d.onboardingBlockId || !(d.onboardingBlockId in d.blocks)) d.onboardingBlockId = id;
    // Added after a block that goes nowhere yet: it becomes that block's next block.
    const prev = after && d.blocks[after];
    if (prev && prev.type !== "return" && !prev.defaultOutput) prev.defaultOutput = { type: "block", blockId: id };
  },
  removeBlock(d, { id }, { selected }) {
    delete d.blocks[id];
    if (d.onboardingBlockId === id) d.onboardingBlockId = Object.keys(d.blocks)[0] || null;
    if (d.meta && d.meta.positions) delete d.meta.positions[id];
    return selected === id ? { select: null } : undefined;
  },
  rename(d, { from, to }, { selected }) {
    const blocks = {};
    for (const [k, v] of Object.entries(d.blocks)) blocks[k === from ? to : k] = k === from ? { ...v, id: to } : v;
    for (const b of Object.values(blocks)) {
      for (const e of exitsOf(b)) if (e.target && e.target.blockId === from) e.target.blockId = to;
    }
    d.blocks = blocks;
    if (d.onboardingBlockId === from) d.onboardingBlockId = to;
    const pos = d.meta && d.meta.positions;
    if (pos && pos[from]) { pos[to] = pos[from]; delete pos[from]; }
    return selected === from ? { select: to } : undefined;
  },
  /** Where output `port` of block `from` goes (0: defaultOutput, i: outputConditions[i-1]); no target: nowhere. */
  connect(d, { from, port, target }) {
    const b = d.blocks[from];
    if (!b) return;
    if (port === 0) { if (target) b.defaultOutput = target; else delete b.defaultOutput; }
    else if (b.outputConditions && b.outputConditions[port - 1]) b.outputConditions[port - 1].target = target;
  },
  move(d, { id, at }) { keepPositions(d, positionsOf(d), { [id]: at }); },
  layout(d) { d.meta = { ...meta(d), positions: autoLayout(d) }; },
  setStart(d, { id }) { d.onboardingBlockId = id; },
  setField(d, { blockId, key, value }) {
    if (value === undefined) delete d.blocks[blockId][key]; else d.blocks[blockId][key] = value;
  },
  /** A top-level property of the definition (enabledForAI, slug, description, …); undefined removes it. */
  setProperty(d, { key, value }) { if (value === undefined) delete d[key]; else d[key] = value; },
  /** The declared inputs, changed by `change(inputs)`. */
  inputs(d, { change }) { d.inputs = Array.isArray(d.inputs) ? d.inputs : []; change(d.inputs); },
  /** A change a field group of the block form makes (conditions, mappings, pickers): `change(d)`. */
  edit(d, { change }) { change(d); },
  /** The whole definition, as the JSON view has it. */
  replace(d, { definition }) {
    for (const k of Object.keys(d)) delete d[k];
    Object.assign(d, definition);
    if (!d.blocks || typeof d.blocks !== "object") d.blocks = {};
  },
};

const SAID = { addBlock: "add a block", removeBlock: "delete a block", rename: "rename a block", connect: "connect",
  move: "move a block", layout: "layout", setStart: "change the start block", setField: "edit a field",
  setProperty: "edit the tool", inputs: "edit the inputs", edit: "edit the block", replace: "edit the JSON" };

/** An action's name (or a batch's: "removeBlock+connect") as words: "delete a block". @param {string} name */
export function describe(name) {
  const first = String(name).split("+")[0];
  return SAID[first] || first;
}

/** @param {any} def @returns {Definition} */
function normalise(def) {
  const d = def && typeof def === "object" ? def : { blocks: {}, onboardingBlockId: null };
  if (!d.blocks) d.blocks = {};
  return d;
}

/** The store over `initial`. */
export function createStore(initial) {
  let def = normalise(initial);
  let selected = null;
  const hist = makeHistory(json(def));
  /** @type {Set<Listener>} */
  const listeners = new Set();
  /** @param {Partial<Change> & {name: string}} change */
  const emit = (change) => {
    const full = { steps: [], before: def, from: null, form: false, ...change };
    for (const fn of [...listeners]) fn(full);
  };
  /** Applies `steps` as one undo step. @param {Step[]} steps @param {{key?: string|null, from?: string|null, form?: boolean}} [opts] */
  function apply(steps, { key = null, from = null, form = false } = {}) {
    const before = def;
    const d = structuredClone(def);
    let select;
    for (const [name, payload] of steps) {
      const out = ACTIONS[name](d, payload, { selected });
      if (out && "select" in out) select = out.select;
    }
    def = d;
    if (select !== undefined) selected = select;
    const name = steps.map(([n]) => n).join("+");
    hist.push(json(def), key, name);
    emit({ name, steps, before, from, form });
  }
  /** @param {"undo"|"redo"} way */
  function travel(way) {
    const went = way === "undo" ? hist.undo() : hist.redo();
    if (went === null) return null;
    const before = def;
    def = JSON.parse(went.text);
    emit({ name: way, before, form: true });
    return went.label;
  }
  return {
    get def() { return def; },
    get selected() { return selected; },
    get canUndo() { return hist.canUndo; },
    get canRedo() { return hist.canRedo; },
    /** @param {Listener} fn */
    subscribe(fn) { listeners.add(fn); return () => listeners.delete(fn); },
    /** One named action. @param {string} name @param {Record<string, any>} [payload] @param {{key?: string|null, from?: string|null, form?: boolean}} [opts] */
    dispatch(name, payload = {}, opts = {}) { apply([[name, payload]], opts); },
    /** Several actions as one step (one mouse gesture). @param {Step[]} steps */
    batch(steps, opts = {}) { if (steps.length) apply(steps, opts); },
    /** @param {string|null} id */
    select(id) { selected = id; emit({ name: "select" }); },
    /** Tells every view to draw the definition as it is (the page was just put in the document). */
    load() { emit({ name: "load", form: true }); },
    /** Undoes the last step; the name of the action undone, or null when there is none. */
    undo() { return travel("undo"); },
    redo() { return travel("redo"); },
  };
}

/** @typedef {ReturnType<typeof createStore>} Store */
