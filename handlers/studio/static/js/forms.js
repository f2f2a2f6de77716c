// A block's form, made from the JSON Schema validation uses (GET /api/definitions/schema): one
// labelled control per field, named by the field. Fields that depend on another (callAI's
// capability, fetchMedia's mode) follow it; callTool and callEndpoint pick from the registry;
// conditions and the next block are edited here too, so the builder works without a mouse.
import { completion } from "./complete.js";
import { button, field, h, id as uid } from "./dom.js";
import { blocksOf, exitsOf, variablesFor } from "./graph.js";

const SKIP = new Set(["type", "id", "title", "outputConditions", "defaultOutput"]); // drawn apart
const LAST = ["onError", "errorVariable"];
const LABELS = { url: "URL", timeoutMs: "Timeout (ms)", llmCredentialId: "LLM credential", serverId: "Server",
  endpointId: "Endpoint", toolId: "Tool", publishedToolId: "Published tool id", source: "Script (JavaScript)",
  value: "Value", onError: "On error", maxTokens: "Max tokens", maxPages: "Max pages", body: "Body",
  headers: "Headers (JSON object)", inputVariables: "Input variables", paramMappings: "Parameters" };
/** Fields where {{variable}} is interpolated: they complete after "{{" and get an "Insert variable" list. */
const INTERPOLATED = new Set(["url", "body", "value", "prompt", "systemPrompt", "userPrompt", "authHeader", "headers"]);
/** Fields that name a variable the block reads: they get the variable list as suggestions. */
const READ_NAMES = new Set(["inputVariable", "mimeTypeVariable", "mediaIdVariable", "urlVariable"]);
const LONG = new Set(["body", "value", "prompt", "systemPrompt", "userPrompt"]);
export const ENDS = [["endAttendance", "End the tool (endAttendance)"]];

export function labelOf(name) {
  return LABELS[name] || name.replace(/([A-Z])/g, " $1").replace(/^./, (c) => c.toUpperCase()).replace(/ ([A-Z])/g, (m, c) => ` ${c.toLowerCase()}`);
}

/** {type, enum, nullable, items} of a property, with anyOf [X, null] unwrapped. */
export function kindOf(prop, defs) {
  let p = prop || {};
  let nullable = false;
  if (Array.isArray(p.anyOf)) {
    const real = p.anyOf.filter((x) => x.type !== "null");
    nullable = real.length < p.anyOf.length;
    p = real[0] || {};
  }
  if (p.$ref) p = defs[p.$ref.split("/").pop()] || {};
  return { type: p.type || (p.enum ? "string" : "string"), enum: p.enum, nullable, items: p.items, default: prop && prop.default };
}

/** Fields shown for the block's current values, in form order. */
export function visibleFields(schema, dependsOn, block) {
  const props = Object.keys(schema.properties || {}).filter((f) => !SKIP.has(f));
  const hidden = new Set();
  for (const [ctrl, byValue] of Object.entries(dependsOn || {})) {
    const all = new Set(Object.values(byValue).flat());
    const shown = new Set(byValue[block[ctrl]] || []);
    for (const f of all) if (!shown.has(f)) hidden.add(f);
  }
  const first = props.filter((f) => !LAST.includes(f) && !hidden.has(f));
  return [...first, ...LAST.filter((f) => props.includes(f))];
}

/** A new block of `type` with every required field set to a valid empty value. */
export function newBlock(type, blockId, schemas) {
  const schema = schemas.blocks[type];
  const block = { type, id: blockId, title: "" };
  for (const f of schema.required || []) {
    if (f in block || SKIP.has(f)) continue;
    const k = kindOf(schema.properties[f], schema.$defs || {});
    block[f] = k.enum ? (k.default ?? k.enum[0]) : k.type === "integer" ? 1 : k.type === "array" ? [] : "";
  }
  if (type === "callAI") { block.capability = "generateText"; block.model = block.model || ""; block.userPrompt = ""; }
  if (type === "fetchMedia") block.mode = "url";
  delete block.title;
  return block;
}

function targetValue(target) {
  if (!target || typeof target !== "object") return "";
  return target.type === "block" ? `block:${target.blockId}` : `end:${target.type}`;
}

function targetOf(value) {
  if (!value) return undefined;
  const [kind, rest] = [value.slice(0, value.indexOf(":")), value.slice(value.indexOf(":") + 1)];
  return kind === "block" ? { type: "block", blockId: rest } : { type: rest };
}

/** A select of where to go next: the other blocks, or an end of the tool. */
export function targetSelect(def, fromId, target, attrs, onchange) {
  const current = targetValue(target);
  const opts = [h("option", { value: "" }, "— choose —")];
  for (const other of Object.keys(blocksOf(def))) {
    if (other === fromId) continue;
    const b = blocksOf(def)[other];
    opts.push(h("option", { value: `block:${other}`, selected: current === `block:${other}` }, `Block ${other}${b && b.title ? ` (${b.title})` : ""}`));
  }
  const ends = [...ENDS];
  if (current.startsWith("end:") && !ends.some(([t]) => `end:${t}` === current)) ends.push([current.slice(4), `End: ${current.slice(4)}`]);
  for (const [t, text] of ends) opts.push(h("option", { value: `end:${t}`, selected: current === `end:${t}` }, text));
  if (current.startsWith("block:") && !(current.slice(6) in blocksOf(def))) {
    opts.push(h("option", { value: current, selected: true }, `Missing block ${current.slice(6)}`));
  }
  const sel = h("select", attrs, opts);
  sel.addEventListener("change", () => onchange(targetOf(sel.value)));
  return sel;
}

/** "Insert variable": puts {{name}} at the caret of `control`. */
function inserter(control, names, onInsert) {
  const sel = h("select", { class: "insert-var", "aria-label": `Insert variable into ${control.name}` },
    h("option", { value: "" }, "{{…}} insert variable"), names.map((n) => h("option", { value: n }, `{{${n}}}`)));
  sel.addEventListener("change", () => {
    if (!sel.value) return;
    const at = control.selectionStart ?? control.value.length;
    const text = `{{${sel.value}}}`;
    control.value = control.value.slice(0, at) + text + control.value.slice(control.selectionEnd ?? at);
    sel.value = "";
    onInsert(control.value);
    control.focus();
    control.setSelectionRange(at + text.length, at + text.length);
  });
  return sel;
}

/** A textarea with line numbers kept beside it (the script editor). */
export function codeEditor(attrs, oninput) {
  const area = h("textarea", { ...attrs, class: "code with-lines", spellcheck: "false", wrap: "off" });
  const gutter = h("pre", { class: "gutter", "aria-hidden": "true" });
  const lines = () => { gutter.textContent = Array.from({ length: area.value.split("\n").length }, (_, i) => i + 1).join("\n"); };
  area.addEventListener("input", () => { lines(); oninput(area.value); });
  area.addEventListener("scroll", () => { gutter.scrollTop = area.scrollTop; });
  area.addEventListener("keydown", (ev) => {
    if (ev.key !== "Tab" || ev.shiftKey || ev.ctrlKey || ev.altKey) return; // Esc then Tab leaves the editor
    if (area.dataset.escaped) { delete area.dataset.escaped; return; }
    ev.preventDefault();
    area.setRangeText("  ", area.selectionStart, area.selectionEnd, "end");
    lines(); oninput(area.value);
  });
  area.addEventListener("keyup", (ev) => { if (ev.key === "Escape") area.dataset.escaped = "1"; });
  lines();
  return [area, h("div", { class: "code-editor" }, gutter, area)];
}

/**
 * @typedef {object} FormCtx  what the builder gives a block's form (js/builder/blockPanel.js)
 * @property {any} def  the definition
 * @property {any} schemas  GET /definitions/schema: {blocks: {type: JSON Schema}, dependsOn, requiredByCapability}
 * @property {{tools?: any[], servers?: any[], creds?: any[]}} lookups  what the pickers offer
 * @property {boolean} readonly
 * @property {Map<string, string[]>} [problems]  messages by the form's key (a field's name, a condition's path)
 * @property {(blockId: string, key: string, value: any, opts?: {coalesce?: boolean}) => void} set
 * @property {(change: (d: any) => void, opts?: {form?: boolean, coalesce?: string}) => void} edit
 * @property {(from: string, to: string) => void} rename
 * @property {(id: string) => void} setStart
 * @property {(toolId: string) => Promise<any[]>} inputsOf  a published tool's declared inputs
 *
 * @typedef {object} Form  one block's form as its field groups see it
 * @property {FormCtx} ctx
 * @property {string} blockId
 * @property {any} block
 * @property {string} type
 * @property {any} schema  the block type's JSON Schema (undefined for an unknown type)
 * @property {boolean} ro
 * @property {string[]} vars  the variables that exist at this block
 * @property {string} listId  the id of a <datalist> of them
 * @property {(control: HTMLElement, key: string) => string|null} mark  marks a control with its key's problems
 * @property {(label: string, control: HTMLElement, key: string, hint?: string|null, extra?: HTMLElement|null) => HTMLElement} wrap
 *   a labelled field for `control`, marked with the problems of form key `key` (also its data-path)
 *
 * @typedef {object} FieldGroup  a part of every form of the given types, in FIELD_GROUPS order
 * @property {string} id
 * @property {string[]} [types]  the block types it belongs to (all when absent)
 * @property {string[]} [owns]  schema fields it draws, kept out of the generic list
 * @property {(form: Form) => (HTMLElement|HTMLElement[]|null)} render
 */

/** The block's id, title and whether it is the start block. @param {Form} f */
function identityGroup(f) {
  const { ctx, blockId, block, ro } = f;
  const isStart = ctx.def.onboardingBlockId === blockId;
  return [
    f.wrap("Block id", h("input", { type: "text", name: "id", value: blockId, readonly: ro,
      onchange: (ev) => ctx.rename(blockId, ev.target.value.trim()) }), "id", "Letters, digits, _ and -; references follow a rename."),
    f.wrap("Title", h("input", { type: "text", name: "title", value: block.title || "", readonly: ro,
      oninput: (ev) => ctx.set(blockId, "title", ev.target.value || undefined) }), "title"),
    h("p", { class: "start-line" }, isStart ? "▶ This is the start block." : "Not the start block. ",
      !isStart && !ro ? button("Make this the start block", () => ctx.setStart(blockId)) : null),
  ];
}

/** A control per schema field no other group owns, in form order. @param {Form} f */
function schemaGroup(f) {
  if (!f.schema) return h("p", { class: "warn" }, `Unknown block type ${f.type}: it fails only if reached. Edit it in the JSON.`);
  const owned = new Set(FIELD_GROUPS.flatMap((g) => g.owns || []));
  return visibleFields(f.schema, (f.ctx.schemas.dependsOn || {})[f.type], f.block)
    .filter((name) => !owned.has(name)).map((name) => fieldOf(f, name));
}

/** SPEC's defaults: what a policy switched on starts from. */
const RETRY = { maxAttempts: 3, initialIntervalMs: 200, backoffCoefficient: 2, maxIntervalMs: 5000,
  retryOn: [429, 502, 503, 504, "timeout", "connection"] };
/** @type {[string, string, Record<string, number>, string][]} key, label, input limits, hint */
const RETRY_NUMBERS = [["maxAttempts", "Max attempts", { min: 1, max: 10 }, "Counts the first attempt (1 to 10)."],
  ["initialIntervalMs", "Initial interval (ms)", { min: 0 }, "The wait after the first attempt; jittered ±20%."],
  ["backoffCoefficient", "Backoff coefficient", { min: 1, step: 0.1 }, "Each wait is the previous one times this."],
  ["maxIntervalMs", "Max interval (ms)", { min: 0 }, "No wait is longer (a longer Retry-After still wins)."]];

/** "Retry on" as typed: statuses, 5xx, timeout, connection, comma-separated. @param {string} text */
function retryOnOf(text) {
  return text.split(",").map((t) => t.trim()).filter(Boolean).map((t) => (/^\d+$/.test(t) ? Number(t) : t));
}

/** The block's retry policy (SPEC's `retry`): off, or its attempts, its waits and what it retries. @param {Form} f */
function retryGroup(f) {
  const { ctx, blockId, block, ro } = f;
  const policy = block.retry && typeof block.retry === "object" ? block.retry : null;
  const on = h("input", { type: "checkbox", name: "retry", checked: !!policy, disabled: ro, id: uid("retry") });
  on.addEventListener("change", () => ctx.edit((d) => {
    d.blocks[blockId].retry = on.checked ? JSON.parse(JSON.stringify(RETRY)) : undefined;
  }, { form: true }));
  /** @param {string} key @param {any} value */
  const put = (key, value) => ctx.edit((d) => {
    const b = d.blocks[blockId];
    b.retry = { ...(b.retry || {}), [key]: value };
  }, { coalesce: `${blockId}.retry.${key}` });
  const parts = [h("div", { class: "check" }, on, h("label", { for: on.id }, "Retry on failure"))];
  if (policy) {
    for (const [key, label, limits, hint] of RETRY_NUMBERS) {
      const input = h("input", { type: "number", name: `retry.${key}`, value: policy[key] ?? RETRY[key], readonly: ro, ...limits });
      input.addEventListener("input", () => { if (input.value !== "") put(key, Number(input.value)); });
      parts.push(f.wrap(label, input, `retry.${key}`, hint));
    }
    const retryOn = h("input", { type: "text", name: "retry.retryOn", readonly: ro, value: (policy.retryOn || RETRY.retryOn).join(", ") });
    retryOn.addEventListener("change", () => put("retryOn", retryOnOf(retryOn.value)));
    parts.push(f.wrap("Retry on", retryOn, "retry.retryOn", "Statuses (429, 503…), 5xx, timeout, connection; comma-separated."));
  }
  const msgs = (ctx.problems || new Map()).get("retry");
  return h("fieldset", { class: "retry" }, h("legend", {}, "Retry policy"), parts,
    msgs && msgs.length ? h("p", { class: "error", role: "alert" }, msgs.join("; ")) : null);
}

/** Where the block goes next, and its conditions (not on a return block). @param {Form} f */
function nextGroup(f) {
  if (!f.schema || f.type === "return") return null;
  const { ctx, blockId, block, ro } = f;
  const next = targetSelect(ctx.def, blockId, block.defaultOutput, { name: "defaultOutput", disabled: ro },
    (t) => ctx.set(blockId, "defaultOutput", t));
  return [f.wrap("Next block *", next, "defaultOutput", "Where the tool goes when no condition matches."),
    conditions(ctx, blockId, block, f.wrap, f.listId)];
}

/**
 * The block form's field groups, in order. A new group (a retry policy, say) is one entry
 * here: the block types it belongs to, the schema fields it draws itself, and its render.
 * @type {FieldGroup[]}
 */
export const FIELD_GROUPS = [
  { id: "identity", owns: ["type", "id", "title"], render: identityGroup },
  { id: "fields", render: schemaGroup },
  { id: "retry", types: ["httpCall", "callEndpoint", "fetchMedia", "callAI"], owns: ["retry"], render: retryGroup },
  { id: "next", owns: ["defaultOutput", "outputConditions"], render: nextGroup },
];

/** The Form of `blockId`, with its helpers. @param {FormCtx} ctx @param {string} blockId @returns {Form} */
function formOf(ctx, blockId) {
  const block = blocksOf(ctx.def)[blockId];
  const type = block && block.type;
  const bad = ctx.problems || new Map();
  const mark = (control, key) => {
    control.setAttribute("data-path", key); // a problem path finds its control (js/builder/blockPanel.js)
    const msgs = bad.get(key);
    if (!msgs || !msgs.length) return null;
    control.setAttribute("aria-invalid", "true");
    control.classList.add("invalid");
    return msgs.join("; ");
  };
  const wrap = (label, control, key, hint = null, extra = null) => {
    const msg = mark(control, key);
    const f = field(label, control, msg || hint);
    if (msg) f.classList.add("invalid");
    if (extra) f.append(extra);
    return f;
  };
  return { ctx, blockId, block, type, schema: ctx.schemas.blocks[type], ro: ctx.readonly,
    vars: variablesFor(ctx.def, blockId), listId: uid("vars"), mark, wrap };
}

/** The form of block `blockId`: its field groups, in order. @param {FormCtx} ctx @param {string} blockId */
export function blockForm(ctx, blockId) {
  const f = formOf(ctx, blockId);
  const parts = [h("datalist", { id: f.listId }, f.vars.map((v) => h("option", { value: v })))];
  for (const group of FIELD_GROUPS) {
    if (group.types && !group.types.includes(f.type)) continue;
    parts.push(group.render(f));
  }
  return h("section", { class: "block-form", "aria-label": `Block ${blockId}` }, parts);
}

/** Fields a picker or an editor of their own draws, by "type.field" ("*" for any type). */
const SPECIAL = {
  "callTool.toolId": (f) => toolPicker(f.ctx, f.blockId, f.block, f.wrap),
  "callTool.publishedToolId": () => null, // set by the tool picker
  "callEndpoint.serverId": (f) => endpointPicker(f.ctx, f.blockId, f.block, f.wrap),
  "callEndpoint.endpointId": () => null, // the endpoint picker's second select
  "callAI.llmCredentialId": (f, name, label) => credentialPicker(f, name, label),
  "*.inputVariables": (f, name) => mappings(f.ctx, f.blockId, name, f.block, f.wrap, f.vars),
  "*.paramMappings": (f, name) => mappings(f.ctx, f.blockId, name, f.block, f.wrap, f.vars),
  "*.source": (f, name, label) => scriptField(f, name, label),
};

/** One schema field's labelled control. @param {Form} f @param {string} name */
function fieldOf(f, name) {
  const { schema, type, block, ctx } = f;
  const required = (schema.required || []).includes(name)
    || (type === "callAI" && ((ctx.schemas.requiredByCapability || {})[block.capability] || []).includes(name));
  const label = `${labelOf(name)}${required ? " *" : ""}`;
  const special = SPECIAL[`${type}.${name}`] || SPECIAL[`*.${name}`];
  if (special) return special(f, name, label);
  const k = kindOf(schema.properties[name], schema.$defs || {});
  const control = plainControl(f, name, k, required);
  const helps = !f.ro && INTERPOLATED.has(name) && k.type === "string";
  const extra = helps ? inserter(control, f.vars, (v) => ctx.set(f.blockId, name, v)) : null;
  const el = f.wrap(label, control, name, null, extra);
  if (helps) control.after(completion(control, f.vars));
  return el;
}

/** A select for an enum, a number, a checkbox, a JSON box, or a text field. @param {Form} f */
function plainControl(f, name, k, required) {
  const { ctx, blockId, block, ro } = f;
  const value = block[name];
  if (k.enum) return enumControl(f, name, k, required);
  if (k.type === "integer" || k.type === "number") {
    const control = h("input", { type: "number", name, value: value ?? "", min: 1, readonly: ro });
    control.addEventListener("input", () => ctx.set(blockId, name, control.value === "" ? undefined : Number(control.value), { coalesce: true }));
    return control;
  }
  if (k.type === "boolean") {
    const control = h("input", { type: "checkbox", name, checked: !!value, disabled: ro });
    control.addEventListener("change", () => ctx.set(blockId, name, control.checked));
    return control;
  }
  if (k.type === "object" || k.type === "array") {
    const control = h("textarea", { name, class: "code", rows: 3, readonly: ro, value: value === undefined ? "" : JSON.stringify(value, null, 2) });
    control.addEventListener("change", () => {
      if (!control.value.trim()) return ctx.set(blockId, name, undefined);
      try { ctx.set(blockId, name, JSON.parse(control.value)); control.setCustomValidity(""); } catch (err) { control.setCustomValidity(`Not JSON: ${err.message}`); control.reportValidity(); }
    });
    return control;
  }
  const control = LONG.has(name) ? h("textarea", { name, rows: 3, readonly: ro, value: value ?? "" }) : h("input", { type: "text", name, value: value ?? "", readonly: ro });
  if (READ_NAMES.has(name)) control.setAttribute("list", f.listId);
  control.addEventListener("input", () => ctx.set(blockId, name, control.value === "" && !required ? undefined : control.value, { coalesce: true }));
  return control;
}

/** A select of an enum's values; a field others depend on (capability, mode) redraws the form. @param {Form} f */
function enumControl(f, name, k, required) {
  const { ctx, blockId, block, ro, schema, type } = f;
  const control = h("select", { name, disabled: ro },
    k.nullable || !required ? h("option", { value: "" }, "— default —") : null,
    k.enum.map((v) => h("option", { value: v, selected: (block[name] ?? k.default) === v }, v)));
  control.addEventListener("change", () => {
    const deps = (ctx.schemas.dependsOn || {})[type] || {};
    ctx.edit((d) => {
      const b = d.blocks[blockId];
      b[name] = control.value || undefined;
      if (name in deps) for (const r of schema.required || []) if (b[r] === undefined) b[r] = "";
    }, { form: name in deps });
  });
  return control;
}

/** callAI's LLM credential. @param {Form} f */
function credentialPicker(f, name, label) {
  const { ctx, blockId, block } = f;
  const sel = h("select", { name, disabled: f.ro }, h("option", { value: "" }, "— choose —"),
    (ctx.lookups.creds || []).map((c) => h("option", { value: c.id, selected: c.id === block[name] }, c.name)));
  sel.addEventListener("change", () => ctx.set(blockId, name, sel.value));
  return f.wrap(label, sel, name);
}

/** executeScript's source, in the code editor. @param {Form} f */
function scriptField(f, name, label) {
  const { ctx, blockId, block } = f;
  const [area, box] = codeEditor({ name, rows: 10, readonly: f.ro, value: block[name] || "" }, (v) => ctx.set(blockId, name, v, { coalesce: true }));
  const msg = f.mark(area, name);
  const el = field(label, area, msg || "The script's return value is written to the output variable; the input variables are in `input`. Esc then Tab leaves the editor.");
  el.replaceChild(box, area); // field() took the textarea out of its box: put it back
  box.append(area);
  return el;
}

function conditions(ctx, blockId, block, wrap, listId) {
  const ro = ctx.readonly;
  const conds = Array.isArray(block.outputConditions) ? block.outputConditions : [];
  const ops = ctx.schemas.blocks.httpCall.$defs.ConditionRule.properties.operator.enum;
  const edit = (fn) => ctx.edit((d) => { const b = d.blocks[blockId]; b.outputConditions = b.outputConditions || []; fn(b.outputConditions); }, { form: true });
  const list = conds.map((c, i) => {
    const rules = Array.isArray(c.rules) ? c.rules : [];
    return h("fieldset", { class: "condition" }, h("legend", {}, `Condition ${c.id || i + 1}`),
      wrap("Condition id", h("input", { type: "text", name: "id", value: c.id || "", readonly: ro,
        onchange: (ev) => edit((cs) => { cs[i].id = ev.target.value; }) }), `outputConditions.${i}.id`),
      wrap("Match", h("select", { name: "logic", disabled: ro, onchange: (ev) => edit((cs) => { cs[i].logic = ev.target.value; }) },
        h("option", { value: "and", selected: c.logic !== "or" }, "all rules (and)"), h("option", { value: "or", selected: c.logic === "or" }, "any rule (or)")), `outputConditions.${i}.logic`),
      rules.map((r, j) => h("div", { class: "rule", role: "group", "aria-label": `Rule ${j + 1}` },
        wrap("Variable", h("input", { type: "text", name: "variable", list: listId, value: r.variable || "", readonly: ro,
          onchange: (ev) => edit((cs) => { cs[i].rules[j].variable = ev.target.value; }) }), `outputConditions.${i}.rules.${j}.variable`),
        wrap("Operator", h("select", { name: "operator", disabled: ro, onchange: (ev) => edit((cs) => { cs[i].rules[j].operator = ev.target.value; }) },
          ops.map((o) => h("option", { value: o, selected: r.operator === o }, o))), `outputConditions.${i}.rules.${j}.operator`),
        wrap("Compared value", h("input", { type: "text", name: "value", value: r.value ?? "", readonly: ro,
          onchange: (ev) => edit((cs) => { cs[i].rules[j].value = ev.target.value || undefined; }) }), `outputConditions.${i}.rules.${j}.value`),
        ro ? null : button("Remove rule", () => edit((cs) => { cs[i].rules.splice(j, 1); }), { "aria-label": `Remove rule ${j + 1} of ${c.id}` }))),
      ro ? null : button("Add rule", () => edit((cs) => { cs[i].rules = [...(cs[i].rules || []), { variable: "", operator: "equals", value: "" }]; })),
      wrap("Then go to", targetSelect(ctx.def, blockId, c.target, { name: "target", disabled: ro },
        (t) => edit((cs) => { cs[i].target = t; })), `outputConditions.${i}.target`),
      ro ? null : button("Remove condition", () => edit((cs) => { cs.splice(i, 1); }), { "aria-label": `Remove condition ${c.id}` }));
  });
  const add = ro ? null : button("Add condition", () => edit((cs) => {
    const taken = new Set(cs.map((c) => c.id));
    let n = cs.length + 1;
    while (taken.has(`condition${n}`)) n += 1;
    cs.push({ id: `condition${n}`, logic: "and", rules: [{ variable: "", operator: "equals", value: "" }], target: undefined });
  }));
  return h("section", { class: "conditions", "aria-label": "Conditions" }, h("h3", {}, "Conditions"),
    conds.length ? null : h("p", { class: "muted" }, "None: the tool always goes to the next block."), list, add);
}

function mappings(ctx, blockId, name, block, wrap, vars) {
  const ro = ctx.readonly;
  const rows = Array.isArray(block[name]) ? block[name] : [];
  const edit = (fn) => ctx.edit((d) => { const b = d.blocks[blockId]; b[name] = b[name] || []; fn(b[name]); }, { form: true });
  const fixed = block.type !== "executeScript"; // callTool and callEndpoint map declared params
  const items = rows.map((m, i) => {
    const value = h("input", { type: "text", name: "value", value: m.value ?? "", readonly: ro, "data-path": `${name}.${i}.value`,
      "aria-label": `Value of ${m.name || `mapping ${i + 1}`}`, oninput: (ev) => ctx.edit((d) => { d.blocks[blockId][name][i].value = ev.target.value; }, { coalesce: `${blockId}.${name}.${i}` }) });
    const item = h("li", { class: "mapping" },
      fixed ? h("code", {}, `${m.name}${m.in ? ` (${m.in})` : ""}`) : h("input", { type: "text", name: "name", value: m.name || "", readonly: ro, "data-path": `${name}.${i}.name`,
        "aria-label": `Name of mapping ${i + 1}`, onchange: (ev) => edit((ms) => { ms[i].name = ev.target.value; }) }),
      " = ", value, ro ? null : inserter(value, vars, (v) => ctx.edit((d) => { d.blocks[blockId][name][i].value = v; })),
      !fixed && !ro ? button("Remove", () => edit((ms) => { ms.splice(i, 1); }), { "aria-label": `Remove mapping ${i + 1}` }) : null);
    if (!ro) value.after(completion(value, vars));
    return item;
  });
  return h("fieldset", { class: "mappings" }, h("legend", {}, labelOf(name)),
    items.length ? h("ul", {}, items) : h("p", { class: "muted" }, fixed ? "Nothing to map." : "No input variables."),
    !fixed && !ro ? button("Add input variable", () => edit((ms) => { ms.push({ name: "", value: "" }); })) : null);
}

function toolPicker(ctx, blockId, block, wrap) {
  const tools = (ctx.lookups.tools || []).filter((t) => t.publishedToolId || (t.publishedTool && t.publishedTool.id));
  const sel = h("select", { name: "toolId", disabled: ctx.readonly }, h("option", { value: "" }, "— choose a published tool —"),
    tools.map((t) => h("option", { value: t.id, selected: t.id === block.toolId }, t.name)));
  sel.addEventListener("change", async () => {
    const t = tools.find((x) => x.id === sel.value);
    const inputs = t ? await ctx.inputsOf(t.id) : [];
    ctx.edit((d) => {
      const b = d.blocks[blockId];
      b.toolId = t ? t.id : "";
      b.publishedToolId = t ? (t.publishedToolId || t.publishedTool.id) : "";
      const old = Object.fromEntries((b.inputVariables || []).map((m) => [m.name, m.value]));
      b.inputVariables = inputs.map((inp) => ({ name: inp.name, value: old[inp.name] ?? "" }));
    }, { form: true });
  });
  return wrap("Tool *", sel, "toolId", "A published tool; its declared inputs are mapped below.");
}

function endpointPicker(ctx, blockId, block, wrap) {
  const servers = ctx.lookups.servers || [];
  const srv = servers.find((s) => s.id === block.serverId);
  const sSel = h("select", { name: "serverId", disabled: ctx.readonly }, h("option", { value: "" }, "— choose a server —"),
    servers.map((s) => h("option", { value: s.id, selected: s.id === block.serverId }, s.name)));
  const eps = (srv && srv.endpoints) || [];
  const eSel = h("select", { name: "endpointId", disabled: ctx.readonly }, h("option", { value: "" }, "— choose an endpoint —"),
    eps.map((e) => h("option", { value: e.id, selected: e.id === block.endpointId }, `${e.method} ${e.path} (${e.name})`)));
  sSel.addEventListener("change", () => ctx.edit((d) => { const b = d.blocks[blockId]; b.serverId = sSel.value; b.endpointId = ""; b.paramMappings = []; }, { form: true }));
  eSel.addEventListener("change", () => {
    const ep = eps.find((e) => e.id === eSel.value);
    ctx.edit((d) => {
      const b = d.blocks[blockId];
      b.endpointId = eSel.value;
      const old = Object.fromEntries((b.paramMappings || []).map((m) => [`${m.in}:${m.name}`, m.value]));
      b.paramMappings = ((ep && ep.params) || []).map((p) => ({ name: p.name, in: p.in, value: old[`${p.in}:${p.name}`] ?? "" }));
    }, { form: true });
  });
  return h("div", {}, wrap("Server *", sSel, "serverId"), wrap("Endpoint *", eSel, "endpointId"));
}

export { exitsOf };
