// Undo and redo over snapshots of the definition (as JSON text: cheap to compare and immune to
// later mutation), each labelled with the action that made it. Typing in one field is one step:
// edits with the same coalesce key that follow each other replace the top snapshot instead of
// adding one.
const LIMIT = 200; // bounded: a long session keeps the last 200 steps

/**
 * @typedef {{ text: string, label: string }} Step  a snapshot and the action that made it
 * @typedef {{ text: string, label: string } | null} Travel  where undo/redo went, and the step it crossed
 */

/** @param {string} initial */
export function history(initial) {
  /** @type {Step[]} */
  const past = [];
  /** @type {Step[]} */
  let future = [];
  /** @type {Step} */
  let now = { text: initial, label: "" };
  let lastKey = null;
  return {
    /**
     * Records `next` as the present, made by the action `label`; false when nothing changed.
     * @param {string} next @param {string|null} [key] @param {string} [label]
     */
    push(next, key = null, label = "edit") {
      if (next === now.text) return false;
      if (key && key === lastKey && past.length) { now = { text: next, label }; future = []; return true; }
      past.push(now);
      if (past.length > LIMIT) past.shift();
      now = { text: next, label };
      future = [];
      lastKey = key;
      return true;
    },
    /** @returns {Travel} */
    undo() {
      if (!past.length) return null;
      const crossed = now.label;
      future.push(now);
      now = past.pop();
      lastKey = null;
      return { text: now.text, label: crossed };
    },
    /** @returns {Travel} */
    redo() {
      if (!future.length) return null;
      past.push(now);
      now = future.pop();
      lastKey = null;
      return { text: now.text, label: now.label };
    },
    get canUndo() { return past.length > 0; },
    get canRedo() { return future.length > 0; },
    get present() { return now.text; },
  };
}
