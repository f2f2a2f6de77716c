// Runs from the history: finding one (contact, tool, status, error code, time range) and one
// run's page: its definition as it ran on the builder's canvas (js/canvas.js, read-only) with
// the path highlighted and each node's status and duration, a node's data on click (what it
// read and wrote, its HTTP exchange, its error), a callTool's child run opened in place, and
// "Run from here" (fork), whose answer shows next to the original's.
import { api, ApiError } from "../api.js";
import { saveAsCase } from "../cases.js";
import { runOverlay, showRun } from "../canvas.js";
import { button, field, h, json, table, when } from "../dom.js";
import { blocksOf, readsOf } from "../graph.js";
import { outcome, timeline } from "../timeline.js";
import { refusal } from "./tools.js";

const enc = encodeURIComponent;
const STATUSES = ["", "ok", "error", "cancelled", "timeout"];
const PAGE = 20; // runs per page; "Load more" asks for the next with the cursor

/** A datetime-local value (the browser's time zone) as ISO 8601, or "" when empty. */
function iso(value) {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

/** A run's row: its tool by name (the tool's id when it has none here). @param {Map<string, string>} names */
function runRow(r, names) {
  const tool = names.get(r.toolId) || names.get(r.publishedToolId) || r.toolId || "";
  return h("tr", {},
    h("th", { scope: "row" }, h("a", { href: `#/runs/${enc(r.executionId)}` }, r.executionId)),
    h("td", {}, tool), h("td", {}, r.publishedToolId),
    h("td", { class: r.status === "ok" ? "ok" : "err" }, r.status),
    h("td", {}, r.errorCode || ""), h("td", {}, when(r.startedMs)),
    h("td", { class: "num" }, `${r.durationMs} ms`), h("td", {}, r.contactId || ""));
}

/** Tool names by tool id and by published tool id. */
export function toolNames(tools) {
  const names = new Map();
  for (const t of tools) {
    names.set(t.id, t.name || t.id);
    const pt = t.publishedToolId || (t.publishedTool && t.publishedTool.id);
    if (pt) names.set(pt, t.name || t.id);
  }
  return names;
}

const FILTERS = ["contactId", "toolId", "status", "errorCode", "since", "until"];

/** The filter form's controls, filled from the address's query (so Back finds them as they were). */
function filterControls(tools, query) {
  const at = (k) => query.get(k) || "";
  const c = {
    contactId: h("input", { name: "contactId", autocomplete: "off", value: at("contactId") }),
    toolId: h("select", { name: "toolId" }, h("option", { value: "" }, "any"),
      tools.map((t) => h("option", { value: t.id, selected: t.id === at("toolId") }, t.name))),
    status: h("select", { name: "status" }, STATUSES.map((v) => h("option", { value: v, selected: v === at("status") }, v || "any"))),
    errorCode: h("input", { name: "errorCode", autocomplete: "off", value: at("errorCode") }),
    since: h("input", { name: "since", type: "datetime-local", step: "1", value: at("since") }),
    until: h("input", { name: "until", type: "datetime-local", step: "1", value: at("until") }),
  };
  const values = () => new URLSearchParams(FILTERS.filter((k) => c[k].value.trim()).map((k) => [k, c[k].value.trim()]));
  return { c, values };
}

/** The API's query for the filters (times as ISO 8601 in UTC). @param {URLSearchParams} filters */
function apiQuery(filters) {
  const q = new URLSearchParams({ state: "finished", limit: String(PAGE) });
  for (const [k, v] of filters) q.set(k, k === "since" || k === "until" ? iso(v) : v);
  for (const k of ["since", "until"]) if (q.get(k) === "") q.delete(k);
  return q;
}

/**
 * `#/runs?…`: finished runs by contact, tool, status, error code and time range, newest first.
 * The filters live in the address, so Back from a run returns to the same list.
 */
export async function runsPage(ctx) {
  const tools = await api("GET", "/tools").catch(() => []);
  const names = toolNames(tools);
  const { c, values } = filterControls(tools, ctx.query || new URLSearchParams());
  const out = h("div", { "aria-live": "polite" });
  const body = h("tbody", {});
  let cursor = null;
  let query = apiQuery(values());
  async function search(more) {
    const q = new URLSearchParams(query);
    if (more && cursor) q.set("cursor", cursor);
    try {
      const page = await api("GET", `/executions?${q}`);
      cursor = page.nextCursor;
      if (!more) body.replaceChildren();
      body.append(...page.executions.map((r) => runRow(r, names)));
      const found = body.children.length
        ? h("table", {}, h("caption", {}, "Runs, newest first"),
          h("thead", {}, h("tr", {}, ["Execution", "Tool", "Published tool", "Status", "Error", "Started", "Duration", "Contact"]
            .map((x) => h("th", { scope: "col" }, x)))), body)
        : h("p", { class: "empty" }, "No run matches.");
      out.replaceChildren(found, cursor ? button("Load more", () => search(true)) : "");
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.replaceChildren(refusal(err));
    }
  }
  const form = h("form", { class: "filters", "aria-label": "Find runs",
    onsubmit: (e) => {
      e.preventDefault();
      const filters = values();
      ctx.replace(filters.size ? `#/runs?${filters}` : "#/runs");
      cursor = null;
      query = apiQuery(filters);
      search(false);
    } },
  field("Contact id", c.contactId), field("Tool", c.toolId), field("Status", c.status), field("Error code", c.errorCode),
  field("Started after", c.since), field("Started before", c.until), h("button", { type: "submit" }, "Find runs"));
  await search(false);
  return h("section", { "aria-labelledby": "runs-h" }, h("h1", { id: "runs-h" }, "Runs"), form, out);
}

/**
 * The variables a run had when it reached `blockId` (the first time): its starting variables
 * with every earlier block's writes applied, as the fork API computes them (history/fork.py).
 */
export function variablesAt(steps, blockId) {
  let vars = {};
  for (const st of steps) {
    if (st.type === "started") vars = { ...((st.detail && st.detail.variables) || {}) };
    else if (st.type === "block") {
      if (st.blockId === blockId) return vars;
      Object.assign(vars, st.writes || {});
    }
  }
  return null;
}

/** The original's answer in the shape `outcome` draws (the history keeps it as text). */
function answerOf(run) {
  let result = run.result;
  try { result = JSON.parse(run.result); } catch { /* a text result stays text */ }
  return { ok: run.status === "ok", result: result ?? "", durationMs: run.durationMs,
    error: run.status === "ok" ? null : { code: run.errorCode || run.status, message: run.errorMessage || "" } };
}

function kv(k, v) { return v === null || v === undefined || v === "" ? null : h("div", { class: "kv" }, h("dt", {}, k), h("dd", {}, v)); }

/** A block's attempts under its retry policy: each one's status (or error), how long it
 * took, how long the block waited before it. Null when the block has no policy. */
function attemptsOf(step, blockId, run) {
  const attempts = step.detail && Array.isArray(step.detail.attempts) ? step.detail.attempts : null;
  if (!attempts) return null;
  const rows = attempts.map((a, i) => h("tr", {},
    h("th", { scope: "row" }, String(i + 1)),
    h("td", { class: a.status !== undefined && a.status < 400 ? "ok" : "err" }, a.status !== undefined ? `HTTP ${a.status}` : (a.error || "error")),
    h("td", { class: "num" }, `${a.durationMs ?? 0} ms`), h("td", { class: "num" }, `${a.waitMs ?? 0} ms`)));
  return table(`Attempts of block ${blockId}${run ? ` (run ${run})` : ""}`, ["Attempt", "Outcome", "Duration", "Waited before"], rows);
}

/** A heading of `level` (2 on the page, deeper for a child run opened inside a block). */
const heading = (level, text) => h(`h${Math.min(level, 6)}`, {}, text);

/**
 * What a block's detail offers under its data, in order: each gets the run's view, the block
 * and the variables it had there, and returns an element or null. "Run from here" is one; a
 * new action on a block of a run is one more entry.
 * @type {((c: {ctx: any, view: any, blockId: string, seen: Record<string, any>}) => (HTMLElement|null))[]}
 */
export const BLOCK_ACTIONS = [
  ({ ctx, view, blockId, seen }) => (ctx.canWrite ? forkControl(view, blockId, seen) : null),
];

/**
 * What a run's page offers under its summary, in order (each gets the page context and the
 * run's view and returns an element or null): a new action on a whole run is one entry here.
 * @type {((c: {ctx: any, view: any}) => (HTMLElement|null))[]}
 */
export const RUN_ACTIONS = [
  // js/cases.js: the run's inputs and its blocks' recorded answers kept as a case of its tool.
  ({ ctx, view }) => (ctx.canWrite ? saveAsCase(ctx, view.run) : null),
];

/** What a node read and wrote, its HTTP exchange, its error (the API masked any secret). */
function nodeDetail(ctx, view, blockId) {
  const { run, def } = view;
  const ran = run.steps.filter((x) => x.type === "block" && x.blockId === blockId);
  const block = blocksOf(def)[blockId] || {};
  const box = h("section", { class: "node-detail", "aria-label": `Block ${blockId}` }, heading(view.level, `Block ${blockId}`));
  if (!ran.length) {
    box.append(h("p", { class: "muted" }, `Block ${blockId} (${block.type || "?"}) did not run.`));
    return box;
  }
  const seen = variablesAt(run.steps, blockId) || {};
  const names = [...new Set(readsOf(block).map(([, name]) => name))];
  const read = Object.fromEntries(names.filter((n) => n in seen).map((n) => [n, seen[n]]));
  ran.forEach((step, i) => {
    box.append(h("dl", { "aria-label": ran.length > 1 ? `Run ${i + 1} of block ${blockId}` : `What block ${blockId} did` },
      kv("type", step.blockType), kv("status", step.ok ? "ok" : "error"), kv("duration", `${step.durationMs ?? 0} ms`),
      kv("read", i === 0 && names.length ? h("pre", {}, json(read)) : null),
      kv("wrote", step.writes && Object.keys(step.writes).length ? h("pre", {}, json(step.writes)) : null),
      kv("HTTP", step.http ? `${step.http.method || ""} ${step.http.url || ""} → ${step.http.status ?? "—"}` : null),
      kv("attempts", attemptsOf(step, blockId, ran.length > 1 ? i + 1 : 0)),
      kv("matched", step.matchedConditionId), kv("next", step.next),
      kv("error", step.error ? `${step.error.code}: ${step.error.message || ""}` : null)));
  });
  const spawned = run.steps.find((x) => x.type === "spawned" && x.blockId === blockId && x.child);
  if (spawned) {
    const holder = h("div", { class: "child-run", "aria-label": `Child run ${spawned.child}`, role: "region" });
    box.append(button(`Open child run ${spawned.child}`, async () => {
      const child = await runView(ctx, spawned.child, view.level + 1);
      holder.replaceChildren(child.el);
      child.draw();
    }), holder);
  }
  for (const action of BLOCK_ACTIONS) {
    const el = action({ ctx, view, blockId, seen });
    if (el) box.append(el);
  }
  return box;
}

/** "Run from here": the variables the original had at the block, a definition, the answer. */
function forkControl(view, blockId, seen) {
  const { run } = view;
  const out = h("div", { "aria-live": "polite" });
  const vars = h("textarea", { rows: 6, name: "variables", class: "code", spellcheck: "false", value: json(seen) });
  const choice = (value, label, checked) => {
    const input = h("input", { type: "radio", name: `definition-${run.executionId}-${blockId}`, value, checked });
    return h("label", { class: "check" }, input, ` ${label}`);
  };
  const pasted = h("textarea", { rows: 6, name: "definition", class: "code", spellcheck: "false", placeholder: '{"onboardingBlockId": …, "blocks": {…}}' });
  // The history stores secrets only as "***" (history/fork.py refuses to run with them).
  const masked = Object.keys(seen).filter((k) => JSON.stringify(seen[k]).includes("***"));
  const note = masked.length
    ? h("p", { class: "muted", role: "note" }, `Secrets are not kept in the history: type the values of ${masked.join(", ")} (shown as ***) before running.`)
    : null;
  const form = h("form", { class: "fork", "aria-label": `Run from block ${blockId}` },
    field(`Variables at block ${blockId} (JSON)`, vars, "The variables the run had when it reached this block; change any before running."),
    note,
    h("fieldset", {}, h("legend", {}, "Definition"),
      choice("ran", "As it ran", true), choice("draft", "The current draft", false), choice("json", "Pasted JSON", false),
      field("Definition (JSON)", pasted, "Used when \"Pasted JSON\" is chosen.")),
    h("button", { type: "submit", class: "primary" }, `Run from ${blockId}`), out);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const fail = (text) => out.replaceChildren(h("p", { class: "error", role: "alert" }, text));
    let variables, definition;
    try { variables = JSON.parse(vars.value || "{}"); } catch (err) { fail(`Variables: ${err.message}`); return; }
    if (!variables || typeof variables !== "object" || Array.isArray(variables)) { fail("Variables: expected a JSON object"); return; }
    const which = form.querySelector("input[type=radio]:checked").value;
    if (which === "draft") definition = "draft";
    if (which === "json") {
      try { definition = JSON.parse(pasted.value); } catch (err) { fail(`Definition: ${err.message}`); return; }
    }
    out.replaceChildren(h("p", {}, "Running…"));
    try {
      const fork = await api("POST", `/executions/${enc(run.executionId)}/fork?wait=true`,
        { fromBlockId: blockId, variables, ...(definition === undefined ? {} : { definition }) });
      out.replaceChildren(h("p", { class: "ok", role: "status" }, "Forked: ",
        h("a", { href: `#/runs/${enc(fork.executionId)}` }, `open run ${fork.executionId}`)));
      view.showFork(fork, blockId);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.replaceChildren(refusal(err));
    }
  });
  const open = h("details", { class: "fork-box" }, h("summary", {}, "Run from here"), form);
  return open;
}

/**
 * The run's own answer: "Original" beside the answers of its forks; a fork's page names it as
 * the fork's (the original is the run it was forked from).
 */
function ownAnswer(run, level) {
  const [region, title] = run.forkedFrom ? ["This fork's answer", "This fork"] : ["Original answer", "Original"];
  return h("section", { "aria-label": region }, heading(level, title), outcome(answerOf(run)));
}

/** One run: summary, answers, the canvas, the opened node, and the trace as a list. */
async function runView(ctx, executionId, level = 2) {
  const run = await api("GET", `/executions/${enc(executionId)}/history`);
  const def = run.published && run.published.definition;
  const place = h("div", {});
  const canvasBox = h("div", { class: "canvas run-canvas", role: "group",
    "aria-label": run.depth ? `The definition of ${run.publishedToolId} as it ran` : "The definition as it ran" });
  const answers = h("div", { class: "answers", role: "group", "aria-label": "Answers" }, ownAnswer(run, level));
  const { status, path } = runOverlay(run.steps);
  const last = [...run.steps].reverse().find((x) => x.type === "block");
  const lastExit = last && last.next && last.next.startsWith("@") ? (last.matchedConditionId || "default") : null;
  const view = { run, def, level, showFork: null, draw: null };
  let drawn = null;
  const zoom = (dir) => () => drawn && drawn.zoom(dir);
  const tools = h("div", { class: "canvas-tools", role: "toolbar", "aria-label": "Canvas" },
    button("Zoom in", zoom(1)), button("Zoom out", zoom(-1)), button("Reset zoom", zoom(0)),
    run.definitionHash ? h("span", { class: "muted" }, `definition ${String(run.definitionHash).slice(0, 12)}, the version this run used`) : null);
  view.draw = () => {
    if (!def) return;
    drawn = showRun(canvasBox, def, status, path, { lastExit, onSelect: (id) => {
      drawn.mark({ status, selected: id }); // in place: drawing again would lose pan and zoom
      place.replaceChildren(nodeDetail(ctx, view, id));
    } });
  };
  view.showFork = (fork, blockId) => {
    answers.querySelector("[data-fork]")?.remove();
    answers.append(h("section", { "aria-label": "Fork answer", "data-fork": "" },
      heading(level, `Fork from ${blockId}`), outcome(fork.result),
      h("p", {}, h("a", { href: `#/runs/${enc(fork.executionId)}` }, `Run ${fork.executionId}`))));
  };
  const forked = run.forkedFrom
    ? h("p", {}, "Forked from ", h("a", { href: `#/runs/${enc(run.forkedFrom.executionId)}` }, run.forkedFrom.executionId),
      ` at block ${run.forkedFrom.blockId}.`) : null;
  const forks = run.forks.length
    ? h("p", {}, "Forks: ", run.forks.map((f) => [h("a", { href: `#/runs/${enc(f)}`, class: "fork-link" }, f), " "])) : null;
  const parent = run.parentExecutionId
    ? h("p", {}, "Called by ", h("a", { href: `#/runs/${enc(run.parentExecutionId)}` }, run.parentExecutionId)) : null;
  // The run's OpenTelemetry trace, linked through CHATFLOW_TRACE_URL when it is set.
  const traced = run.traceId
    ? h("p", {}, "Trace ", run.traceUrl
      ? h("a", { href: run.traceUrl, target: "_blank", rel: "noopener" }, run.traceId)
      : h("code", {}, run.traceId)) : null;
  const el = h("div", { class: "run-view" },
    h("p", { class: run.status === "ok" ? "ok" : "err" },
      `${run.status}${run.errorCode ? ` (${run.errorCode}: ${run.errorMessage || ""})` : ""} · ${run.publishedToolId} · ${run.durationMs} ms · contact ${run.contactId || "—"} · ${when(run.startedMs)}`),
    forked, forks, parent, traced, answers, RUN_ACTIONS.map((action) => action({ ctx, view })),
    run.trace === "stored" ? null : h("p", { class: "muted" }, `Trace ${run.trace}: no block data for this run.`),
    def ? [h("p", { class: "hint" }, "The path taken is highlighted; open a block to see what it read and wrote."), tools, canvasBox]
      : h("p", { class: "muted" }, "The definition this run used is not stored."),
    place,
    h("details", {}, h("summary", {}, "Trace as a list"),
      timeline(run.steps.map((st) => ({ ...st, execId: run.executionId, detail: { ...(st.detail || {}), ...(st.http || {}) } })), "Run trace")));
  return { el, draw: view.draw };
}

/** `#/runs/<id>`: one run from the history. */
export async function runPage(ctx, executionId) {
  const view = await runView(ctx, executionId);
  ctx.afterMount(view.draw); // the canvas measures itself: drawn once in the document
  return h("article", { "aria-labelledby": "run-h" },
    h("h1", { id: "run-h" }, `Run ${executionId}`), view.el);
}
