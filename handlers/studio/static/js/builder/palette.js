// The palette: a button per block type. A new block gets the next free id of its type, goes
// where the canvas adapter places it, follows the selected block when that one goes nowhere
// yet (ACTIONS.addBlock), and is selected.
import { button, h } from "../dom.js";
import { newBlock } from "../forms.js";
import { blocksOf, TYPES } from "../graph.js";

export const TYPE_NAMES = { httpCall: "HTTP call", executeScript: "Script", callEndpoint: "Call endpoint", callTool: "Call tool",
  fetchMedia: "Fetch media", callAI: "Call AI", return: "Return" };

/** The first free id of `type`: httpCall1, httpCall2, … */
export function freeId(def, type) {
  const blocks = blocksOf(def);
  let n = 1;
  while (`${type}${n}` in blocks) n += 1;
  return `${type}${n}`;
}

/**
 * @param {{ store: import("./store.js").Store, schemas: any, ctx: any, rw: boolean }} env
 * @param {{ place: () => {x: number, y: number} }} canvas
 */
export function palette({ store, schemas, ctx, rw }, canvas) {
  if (!rw) return null;
  const add = (type) => {
    const id = freeId(store.def, type);
    store.dispatch("addBlock", { id, block: newBlock(type, id, schemas), at: canvas.place(), after: store.selected }, { form: true });
    store.select(id);
    ctx.say(`Added block ${id}.`);
  };
  return h("section", { class: "palette", "aria-labelledby": "palette-h" },
    h("h2", { id: "palette-h" }, "Add block"),
    h("ul", {}, TYPES.map((t) => h("li", {},
      // The name starts with what the button shows ("+" aside), then says what it adds.
      button(`+ ${TYPE_NAMES[t]}`, () => add(t), { "aria-label": `${TYPE_NAMES[t]}: add ${t} block`, "data-type": t })))));
}
