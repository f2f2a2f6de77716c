// What a definition's graph is, without any DOM: its edges (outputConditions and defaultOutput),
// the blocks that can run before a block, the variables each block writes and reads, and the
// problems the shape check cannot see (broken targets, unreachable blocks, unknown variables).

export const TYPES = ["httpCall", "executeScript", "callEndpoint", "callTool", "fetchMedia", "callAI", "return"];

/** The block fields that name a variable the block writes. */
export const WRITES = ["outputVariable", "responseStatusVariable", "responseBodyVariable", "errorVariable",
  "base64Variable", "mimeTypeVariable"];
/** callAI and fetchMedia read these by name (no braces). */
const READ_NAMES = { callAI: ["inputVariable", "mimeTypeVariable"], fetchMedia: ["mediaIdVariable", "urlVariable"] };

export function blocksOf(def) {
  return (def && typeof def.blocks === "object" && def.blocks && !Array.isArray(def.blocks)) ? def.blocks : {};
}

/** Each way out of a block: port 0 is defaultOutput, port i+1 is outputConditions[i]. */
export function exitsOf(block) {
  if (!block || typeof block !== "object" || block.type === "return") return [];
  const conds = Array.isArray(block.outputConditions) ? block.outputConditions : [];
  return [{ port: 0, label: "default", target: block.defaultOutput },
    ...conds.map((c, i) => ({ port: i + 1, label: String((c && c.id) || `condition ${i + 1}`), target: c && c.target }))];
}

export function targetBlock(target) {
  return target && typeof target === "object" && target.type === "block" ? target.blockId : null;
}

/** Blocks reachable from the onboarding block. */
export function reachable(def) {
  const blocks = blocksOf(def);
  const seen = new Set();
  const todo = def && def.onboardingBlockId in blocks ? [def.onboardingBlockId] : [];
  while (todo.length) {
    const at = todo.pop();
    if (seen.has(at)) continue;
    seen.add(at);
    for (const e of exitsOf(blocks[at])) { const to = targetBlock(e.target); if (to in blocks) todo.push(to); }
  }
  return seen;
}

/** Blocks that can run before `id`: those from which a path leads to it. */
export function before(def, id) {
  const blocks = blocksOf(def);
  const into = {};
  for (const [from, b] of Object.entries(blocks)) {
    for (const e of exitsOf(b)) { const to = targetBlock(e.target); if (to) (into[to] ||= []).push(from); }
  }
  const seen = new Set();
  const todo = [...(into[id] || [])];
  while (todo.length) {
    const at = todo.pop();
    if (seen.has(at)) continue;
    seen.add(at);
    todo.push(...(into[at] || []));
  }
  return seen;
}

export function writesOf(block) {
  return WRITES.map((f) => block && block[f]).filter((v) => typeof v === "string" && v);
}

/** Variables a block may read: declared inputs and what blocks before it write. */
export function variablesFor(def, id) {
  const names = new Set();
  for (const inp of Array.isArray(def && def.inputs) ? def.inputs : []) if (inp && inp.name) names.add(String(inp.name));
  const blocks = blocksOf(def);
  for (const other of before(def, id)) for (const v of writesOf(blocks[other])) names.add(v);
  return [...names].sort();
}

// {{router.x}}, {{flow.x}} and {{contact.x}} come from outside the tool (docs/spec.md).
const NAMESPACES = new Set(["router", "flow", "contact"]);
const BRACES = /\{\{\s*([A-Za-z_][\w]*)/g;

/** [field, variable] pairs a block reads ({{x}} in any string, names in rules and read fields). */
export function readsOf(block) {
  const out = [];
  const walk = (value, field) => {
    if (typeof value === "string") for (const m of value.matchAll(BRACES)) out.push([field, m[1]]);
    else if (Array.isArray(value)) value.forEach((v) => walk(v, field));
    else if (value && typeof value === "object") for (const v of Object.values(value)) walk(v, field);
  };
  for (const [field, value] of Object.entries(block || {})) {
    if (field === "outputConditions") continue;
    if (block.type === "executeScript" && field === "source") continue; // JavaScript, not a template
    walk(value, field);
  }
  for (const f of READ_NAMES[block && block.type] || []) if (block[f]) out.push([f, String(block[f])]);
  (Array.isArray(block && block.outputConditions) ? block.outputConditions : []).forEach((c, i) => {
    (Array.isArray(c && c.rules) ? c.rules : []).forEach((r, j) => {
      if (r && r.variable) out.push([`outputConditions.${i}.rules.${j}.variable`, String(r.variable)]);
    });
  });
  return out;
}

/** Problems ({path, message}) and warnings the shape check does not report. */
export function references(def) {
  const blocks = blocksOf(def);
  const problems = [];
  const warnings = [];
  const start = def && def.onboardingBlockId;
  if (start && !(start in blocks)) problems.push({ path: "definition.onboardingBlockId", message: `names block ${start}, which does not exist` });
  const live = reachable(def);
  for (const [id, b] of Object.entries(blocks)) {
    for (const e of exitsOf(b)) {
      const to = targetBlock(e.target);
      if (to && !(to in blocks)) {
        const where = e.port === 0 ? "defaultOutput" : `outputConditions.${e.port - 1}.target`;
        problems.push({ path: `definition.blocks.${id}.${where}`, message: `goes to block ${to}, which does not exist` });
      }
    }
    if (start in blocks && !live.has(id)) {
      problems.push({ path: `definition.blocks.${id}`, message: "is unreachable: no path from the start block leads to it" });
    }
    const known = new Set(variablesFor(def, id));
    const own = new Set(writesOf(b)); // conditions are read after the block wrote its variables
    for (const [field, name] of readsOf(b)) {
      if (field.startsWith("outputConditions.") && own.has(name)) continue;
      if (!known.has(name) && !NAMESPACES.has(name)) {
        warnings.push({ path: `definition.blocks.${id}.${field}`, message: `reads {{${name}}}, which no earlier block writes and no input declares`, warning: true });
      }
    }
  }
  return { problems, warnings };
}

/** The block and field a problem path names: definition.blocks.b1.url → ["b1", "url"]. */
export function blockOfPath(path) {
  const m = String(path || "").match(/(?:^|\.)blocks\.([^.]+)(?:\.([^.]+))?/);
  return m ? [m[1], m[2] || null] : [null, null];
}
