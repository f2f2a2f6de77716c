// The tools list (with search) and the trash (restore, delete for good).
import { api, ApiError } from "../api.js";
import { confirmDialog } from "../dialog.js";
import { button, field, h, pct, table, when } from "../dom.js";

function statusOf(tool) { return tool.status || (tool.publishedToolId ? "published" : "draft"); }

export function refusal(err) {
  const callers = (err.body && err.body.callers) || [];
  return h("div", { class: "error", role: "alert" },
    h("p", {}, `${err.status || ""} ${err.body && err.body.error ? `(${err.body.error}) ` : ""}${err.message}`),
    callers.length ? h("p", {}, "Still called by:") : null,
    callers.length ? h("ul", { "aria-label": "Callers" }, callers.map((c) => h("li", {}, `${c.name} (${c.id})`))) : null,
    (err.problems || []).length ? h("ul", { "aria-label": "Problems" },
      err.problems.map((p) => h("li", {}, h("code", {}, p.path), " ", p.message))) : null);
}

export async function toolsPage(ctx) {
  const tools = await api("GET", "/tools");
  const search = h("input", { type: "search", name: "q", autocomplete: "off" });
  const rows = tools.map((t) => {
    const m = t.metrics || {};
    const tr = h("tr", {},
      h("th", { scope: "row" }, h("a", { href: `#/tools/${encodeURIComponent(t.id)}` }, t.name)),
      h("td", {}, statusOf(t)),
      h("td", { class: "num" }, String(m.runs7d ?? 0)),
      // No runs: no duration and no rate, rather than a 0 that reads as a measurement.
      h("td", { class: "num" }, m.runs7d ? String(m.avgMs ?? "—") : "—"),
      h("td", { class: "num" }, m.runs7d ? pct(m.successRate) : "—"),
      h("td", {}, t.enabledForAI ? "AI" : "—"),
      h("td", {}, when(t.updatedAt || t.createdAt)));
    tr.dataset.search = `${t.name} ${t.id} ${t.description || ""} ${t.slug || ""}`.toLowerCase();
    return tr;
  });
  const count = h("p", { class: "muted", "aria-live": "polite" }, `${rows.length} tool(s)`);
  search.addEventListener("input", () => {
    const q = search.value.trim().toLowerCase();
    let shown = 0;
    for (const tr of rows) { tr.hidden = q !== "" && !tr.dataset.search.includes(q); if (!tr.hidden) shown += 1; }
    count.textContent = `${shown} of ${rows.length} tool(s)`;
  });
  // Nothing is created until the builder's first save: an abandoned attempt leaves no row.
  const create = ctx.canWrite ? button("New tool", async () => {
    const name = await confirmDialog({ title: "New tool", reason: "Tool name", confirm: "Create",
      body: [h("p", {}, "It is saved when you first press Save.")] });
    if (name) ctx.go(`#/new/${encodeURIComponent(name)}`);
  }) : null;
  return h("section", { "aria-labelledby": "tools-h" },
    h("div", { class: "bar" }, h("h1", { id: "tools-h" }, "Tools"), create),
    field("Search tools", search), count,
    table("Custom tools", ["Name", "Status", "Runs (7d)", "Avg ms", "Success rate", "AI", "Last change"], rows,
      "No tools yet."));
}

export async function trashPage(ctx) {
  const outcome = h("div", { "aria-live": "polite" });
  const all = await api("GET", "/tools?includeDeleted=true");
  const trashed = all.filter((t) => t.deletedAt);
  const rows = trashed.map((t) => h("tr", {},
    h("th", { scope: "row" }, t.name),
    h("td", {}, h("code", {}, t.id)),
    h("td", {}, when(t.deletedAt)),
    ctx.canWrite ? h("td", { class: "actions" },
      button("Restore", async () => {
        try {
          await api("POST", `/tools/${encodeURIComponent(t.id)}/restore`);
          ctx.say(`Restored ${t.name}`);
          ctx.go(`#/tools/${encodeURIComponent(t.id)}`);
        } catch (err) { if (err instanceof ApiError) outcome.replaceChildren(refusal(err)); }
      }, { "aria-label": `Restore ${t.name}` }),
      button("Delete permanently", async () => {
        // Irreversible (the trash is the only undo): ask first, saying so.
        const ok = await confirmDialog({
          title: `Delete ${t.name} permanently?`, confirm: "Delete permanently", danger: true,
          body: [h("p", {}, "The tool and its versions are removed for good; this cannot be undone. ",
            "A published tool that still calls it makes the server refuse, and names it.")],
        });
        if (ok === null) return;
        try {
          await api("DELETE", `/tools/${encodeURIComponent(t.id)}/permanent`);
          ctx.say(`Deleted ${t.name} for good`);
          ctx.go("#/tools");
        } catch (err) { if (err instanceof ApiError) outcome.replaceChildren(refusal(err)); }
      }, { "aria-label": `Delete ${t.name} permanently`, class: "danger" })) : null));
  const headers = ["Name", "Id", "Moved to the trash"];
  if (ctx.canWrite) headers.push("Actions");
  return h("section", { "aria-labelledby": "trash-h" },
    h("h1", { id: "trash-h" }, "Trash"),
    h("p", { class: "muted" }, "A tool in the trash does not run. Deleting for good is refused while a published tool still calls it."),
    outcome,
    table("Tools in the trash", headers, rows, "The trash is empty."));
}

/**
 * A tool's recent runs (its page, below the test panel): the last 10 from the run history,
 * each linking to its run page. Filled in after the page shows; without a history it says so.
 */
export function recentRuns(toolId) {
  const body = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Loading…"));
  const all = h("a", { href: "#/runs" }, "Find more runs");
  const q = new URLSearchParams({ toolId, state: "all", limit: "10" });
  api("GET", `/executions?${q}`).then((page) => {
    const rows = page.executions.map((r) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: r.state === "running" ? `#/executions/${encodeURIComponent(r.executionId)}`
        : `#/runs/${encodeURIComponent(r.executionId)}` }, r.executionId)),
      h("td", { class: r.state === "running" ? "" : r.status === "ok" ? "ok" : "err" }, r.state === "running" ? "running" : r.status),
      h("td", {}, r.errorCode || ""), h("td", {}, when(r.startedMs)),
      h("td", { class: "num" }, r.durationMs === undefined ? "—" : `${r.durationMs} ms`), h("td", {}, r.contactId || "")));
    body.replaceChildren(table("Recent runs of this tool", ["Execution", "Status", "Error", "Started", "Duration", "Contact"],
      rows, "No runs yet."));
  }, (err) => {
    if (!(err instanceof ApiError)) throw err;
    body.replaceChildren(h("p", { class: "muted" }, `No run history: ${err.message}`));
  });
  return h("section", { class: "recent-runs", "aria-labelledby": "recent-h" },
    h("h2", { id: "recent-h" }, "Recent runs"), body, all);
}
