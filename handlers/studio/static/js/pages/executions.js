// Executions in flight (with cancel) and one execution's replayed event log.
import { api, ApiError } from "../api.js";
import { confirmDialog } from "../dialog.js";
import { button, h, table } from "../dom.js";
import { timeline } from "../timeline.js";
import { refusal } from "./tools.js";

const enc = encodeURIComponent;

export async function executionsPage(ctx) {
  const out = h("div", { "aria-live": "polite" });
  const holder = h("div", {});
  async function load() {
    const [running, tools] = await Promise.all([api("GET", "/executions"), api("GET", "/tools")]);
    const names = new Map(tools.filter((t) => t.publishedToolId).map((t) => [t.publishedToolId, t.name]));
    const named = (pt) => (names.has(pt) ? `${names.get(pt)} (${pt})` : pt);
    const rows = running.map((r) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: `#/executions/${enc(r.executionId)}` }, r.executionId)),
      h("td", {}, r.activeTool && r.activeTool !== r.tool ? `${named(r.tool)} → ${named(r.activeTool)}` : named(r.tool)),
      h("td", {}, r.block || "—"),
      h("td", { class: "num" }, String(r.depth)),
      h("td", { class: "num" }, `${(r.ageMs / 1000).toFixed(1)} s`),
      h("td", {}, r.contactId),
      ctx.canWrite ? h("td", {}, button("Cancel", async () => {
        const reason = await confirmDialog({ title: `Cancel ${r.executionId}?`, confirm: "Cancel execution", danger: true,
          reason: "Reason (the caller receives it)",
          body: [h("p", {}, `The run of ${named(r.tool)} stops, with every tool it called; its caller gets an execution_cancelled error.`)] });
        if (reason === null) return;
        try {
          await api("POST", `/executions/${enc(r.executionId)}/cancel`, { reason });
          out.replaceChildren(h("p", { class: "ok" }, `Cancelled ${r.executionId}.`));
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          out.replaceChildren(refusal(err));
        }
        await load();
      }, { "aria-label": `Cancel ${r.executionId}`, class: "danger" })) : null));
    const headers = ["Execution", "Tool", "Active block", "Depth", "Age", "Contact"];
    if (ctx.canWrite) headers.push("Actions");
    holder.replaceChildren(table("Executions in flight", headers, rows, "No executions in flight."));
  }
  await load();
  return h("section", { "aria-labelledby": "ex-h" },
    h("div", { class: "bar" }, h("h1", { id: "ex-h" }, "Executions"), button("Refresh", load)),
    out, holder);
}

export async function executionPage(ctx, executionId) {
  const log = await api("GET", `/executions/${enc(executionId)}/events`);
  const r = log.replay || {};
  return h("article", { "aria-labelledby": "exe-h" },
    h("h1", { id: "exe-h" }, `Execution ${executionId}`),
    h("p", {}, h("a", { href: `#/runs/${enc(executionId)}` }, "Its run page"), " (from the run history, once it finished: the path on the graph, fork)."),
    h("p", { class: "muted" }, `Replayed ${r.executions} execution(s), ${r.transitions} transition(s): `,
      r.firstDifference ? `first difference: ${r.firstDifference}` : "every transition matches the record."),
    timeline(log.events, "Event log"));
}
