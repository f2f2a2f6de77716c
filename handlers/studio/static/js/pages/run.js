// Runs from the history: finding one (contact, tool, status, time) and one run's page, its
// definition as it ran drawn with the path highlighted, each node's status and duration,
// a node's data on click, a callTool's child run opened in place, and "Run from here" (fork).
// Uses the existing drawing (flow.js); the builder's canvas can replace it later.
import { api, ApiError } from "../api.js";
import { button, field, h, json, s, table, when } from "../dom.js";
import { draw } from "../flow.js";
import { outcome, timeline } from "../timeline.js";
import { refusal } from "./tools.js";

const enc = encodeURIComponent;

/** `#/runs`: finished runs by contact, tool, status and start time, newest first, paged. */
export async function runsPage() {
  const contact = h("input", { name: "contactId", autocomplete: "off" });
  const tool = h("input", { name: "publishedToolId", autocomplete: "off" });
  const status = h("select", { name: "status" }, ["", "ok", "error", "cancelled", "timeout"].map((v) => h("option", { value: v }, v || "any")));
  const since = h("input", { name: "since", type: "datetime-local" });
  const out = h("div", { "aria-live": "polite" });
  let cursor = null;
  async function search(more) {
    const q = new URLSearchParams({ state: "finished", limit: "50" });
    if (contact.value) q.set("contactId", contact.value);
    if (tool.value) q.set("publishedToolId", tool.value);
    if (status.value) q.set("status", status.value);
    if (since.value) q.set("since", new Date(since.value).toISOString());
    if (more && cursor) q.set("cursor", cursor);
    try {
      const page = await api("GET", `/executions?${q}`);
      cursor = page.nextCursor;
      const rows = page.executions.map((r) => h("tr", {},
        h("th", { scope: "row" }, h("a", { href: `#/runs/${enc(r.executionId)}` }, r.executionId)),
        h("td", {}, r.publishedToolId), h("td", { class: r.status === "ok" ? "ok" : "err" }, r.status),
        h("td", {}, r.errorCode || ""), h("td", {}, when(r.startedMs)),
        h("td", { class: "num" }, `${r.durationMs} ms`), h("td", {}, r.contactId || "")));
      const found = table("Runs", ["Execution", "Tool", "Status", "Error", "Started", "Duration", "Contact"], rows, "No run matches.");
      out.replaceChildren(found, cursor ? button("More", () => search(true)) : "");
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.replaceChildren(refusal(err));
    }
  }
  const form = h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); cursor = null; search(false); } },
    field("Contact id", contact), field("Published tool id", tool), field("Status", status),
    field("Started after", since), h("button", { type: "submit" }, "Find runs"));
  await search(false);
  return h("section", { "aria-labelledby": "runs-h" }, h("h1", { id: "runs-h" }, "Runs"), form, out);
}

/** Decorates a drawn definition with a run's path: node status, duration, edges taken. */
export function markPath(svg, steps) {
  const blocks = steps.filter((st) => st.type === "block");
  for (const st of blocks) {
    const node = svg.querySelector(`g[data-block="${CSS.escape(st.blockId)}"]`);
    if (!node) continue;
    node.classList.add("ran", st.ok ? "ran-ok" : "ran-error");
    const rect = node.querySelector("rect");
    const x = Number(rect.getAttribute("x")) + 110, y = Number(rect.getAttribute("y")) + 20;
    node.appendChild(s("text", { x, y, class: "sub status" }, `${st.ok ? "✓" : "✖"} ${st.durationMs ?? 0} ms`));
    node.setAttribute("aria-label", `${node.getAttribute("aria-label")}, ran: ${st.ok ? "ok" : `error ${st.error ? st.error.code : ""}`}, ${st.durationMs ?? 0} ms`);
    if (st.next) {
      for (const e of svg.querySelectorAll(`g.edge[data-from="${CSS.escape(st.blockId)}"]`)) {
        const to = e.getAttribute("data-to");
        if (to === st.next || (to.startsWith("exit:") && st.next.startsWith("@"))) e.classList.add("taken");
      }
    }
  }
}

function details(step, run, canWrite, place) {
  const rows = [
    ["block", `${step.blockId} (${step.blockType})`], ["status", step.ok ? "ok" : "error"],
    ["duration", `${step.durationMs ?? 0} ms`],
    ["HTTP", step.http ? `${step.http.method} ${step.http.url || ""} → ${step.http.status ?? "—"}` : null],
    ["matched", step.matchedConditionId], ["next", step.next],
    ["error", step.error ? `${step.error.code}: ${step.error.message}` : null],
    ["wrote", step.writes && Object.keys(step.writes).length ? json(step.writes) : null],
  ].filter(([, v]) => v);
  const box = h("section", { class: "node-detail", "aria-label": `Block ${step.blockId}` },
    h("h2", {}, `Block ${step.blockId}`),
    h("dl", {}, rows.map(([k, v]) => h("div", { class: "kv" }, h("dt", {}, k), h("dd", {}, v)))));
  const spawned = run.steps.find((x) => x.type === "spawned" && x.blockId === step.blockId);
  if (spawned && spawned.child) {
    const holder = h("div", { class: "child-run" });
    box.appendChild(button(`Open child run ${spawned.child}`, async () => {
      holder.replaceChildren(await runView(spawned.child, canWrite));
    }));
    box.appendChild(holder);
  }
  if (canWrite) box.appendChild(forkForm(run, step.blockId));
  place.replaceChildren(box);
}

function forkForm(run, blockId) {
  const vars = h("textarea", { rows: 4, name: "variables", spellcheck: "false" }, "{}");
  const out = h("div", { "aria-live": "polite" });
  return h("form", { class: "fork", onsubmit: async (e) => {
    e.preventDefault();
    let variables;
    try { variables = JSON.parse(vars.value || "{}"); } catch (err) { out.replaceChildren(h("p", { class: "err" }, `Variables: ${err.message}`)); return; }
    try {
      const fork = await api("POST", `/executions/${enc(run.executionId)}/fork?wait=true`, { fromBlockId: blockId, variables });
      out.replaceChildren(outcome(fork.result),
        h("p", {}, "New run: ", h("a", { href: `#/runs/${enc(fork.executionId)}` }, fork.executionId)));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.replaceChildren(refusal(err));
    }
  } }, field("Variables to change (JSON)", vars), h("button", { type: "submit" }, "Run from here"), out);
}

async function runView(executionId, canWrite) {
  const run = await api("GET", `/executions/${enc(executionId)}/history`);
  const svg = s("svg", { class: "flow run", role: "group", "aria-label": "The definition as it ran" });
  const place = h("div", {});
  const def = run.published && run.published.definition;
  if (def) {
    draw(svg, def);
    markPath(svg, run.steps);
    svg.addEventListener("click", (e) => {
      const node = e.target.closest("g[data-block]");
      if (!node) return;
      const id = node.getAttribute("data-block");
      const step = run.steps.find((x) => x.type === "block" && x.blockId === id);
      if (step) details(step, run, canWrite, place);
      else place.replaceChildren(h("p", { class: "muted" }, `Block ${id} did not run.`));
    });
  }
  const forked = run.forkedFrom
    ? h("p", {}, "Forked from ", h("a", { href: `#/runs/${enc(run.forkedFrom.executionId)}` }, run.forkedFrom.executionId), ` at block ${run.forkedFrom.blockId}.`) : null;
  const forks = run.forks.length
    ? h("p", {}, "Forks: ", run.forks.map((f) => h("a", { href: `#/runs/${enc(f)}`, class: "fork-link" }, f))) : null;
  return h("div", { class: "run-view" },
    h("p", { class: run.status === "ok" ? "ok" : "err" },
      `${run.status}${run.errorCode ? ` (${run.errorCode}: ${run.errorMessage || ""})` : ""} · ${run.publishedToolId} · ${run.durationMs} ms · contact ${run.contactId || "—"} · ${when(run.startedMs)}`),
    forked, forks,
    run.trace === "stored" ? null : h("p", { class: "muted" }, `Trace ${run.trace}: no block data for this run.`),
    def ? h("div", { class: "drawing" }, svg) : h("p", { class: "muted" }, "The definition this run used is not stored."),
    place,
    h("details", {}, h("summary", {}, "Trace as a list"), timeline(run.steps.map((st) => ({ ...st, execId: run.executionId, detail: { ...(st.detail || {}), ...(st.http || {}) } })), "Run trace")));
}

/** `#/runs/<id>`: one run from the history. */
export async function runPage(ctx, executionId) {
  return h("article", { "aria-labelledby": "run-h" },
    h("h1", { id: "run-h" }, `Run ${executionId}`),
    await runView(executionId, Boolean(ctx && ctx.canWrite)));
}
