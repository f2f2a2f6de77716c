// Undo and redo over snapshots of the definition (as JSON text: cheap to compare and immune to
// later mutation). Typing in one field is one step: edits with the same coalesce key that follow
// each other replace the top snapshot instead of adding one.
const LIMIT = 200; // bounded: a long session keeps the last 200 steps

export function history(initial) {
  let past = [];
  let future = [];
  let now = initial;
  let lastKey = null;
  return {
    /** Records `next` as the present; returns false when nothing changed. */
    push(next, key = null) {
      if (next === now) return false;
      if (key && key === lastKey && past.length) { now = next; future = []; return true; }
      past.push(now);
      if (past.length > LIMIT) past.shift();
      now = next;
      future = [];
      lastKey = key;
      return true;
    },
    undo() { if (!past.length) return null; future.push(now); now = past.pop(); lastKey = null; return now; },
    redo() { if (!future.length) return null; past.push(now); now = future.pop(); lastKey = null; return now; },
    get canUndo() { return past.length > 0; },
    get canRedo() { return future.length > 0; },
    get present() { return now; },
  };
}
