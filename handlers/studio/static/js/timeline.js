// A trace (test-flow, test-block, an execution's replayed log, live debug) as a timeline:
// one entry per block with type, duration, status, HTTP call, matched condition, variables
// written and errors; nested tools indented by depth.
import { h, json } from "./dom.js";

function depthOf(e) {
  if (typeof e.depth === "number") return e.depth;
  return String(e.execId || "").split(".").length - 1;
}

function kv(name, value) {
  if (value === undefined || value === null || value === "") return null;
  return h("div", { class: "kv" }, h("dt", {}, name), h("dd", {}, typeof value === "string" ? value : json(value)));
}

/** One trace entry (LogEntry from the runtime) as a list item. */
export function entry(e) {
  const depth = Math.min(depthOf(e), 6);
  const d = e.detail || {};
  let head;
  if (e.type === "block") head = `${e.ok ? "✓ ok" : "✖ error"} · ${e.blockId} [${e.blockType}] · ${e.durationMs ?? 0} ms`;
  else if (e.type === "spawned") head = `↳ callTool ${e.blockId} → child ${e.child}`;
  else if (e.type === "started") head = `▶ started ${d.publishedToolId || ""}`;
  else if (e.type === "finished") head = `■ finished · result ${JSON.stringify(e.result ?? "")}`;
  else head = `${e.type}${e.blockId ? ` · ${e.blockId}` : ""}`;
  const http = d.method ? `${d.method} ${d.url || ""} → ${d.status ?? "—"}` : null;
  const status = e.type === "block" ? (e.ok ? "ok" : "error") : e.type;
  return h("li", { class: `event depth-${depth} status-${status}` },
    h("p", { class: "head" }, head),
    h("dl", {},
      kv("HTTP", http),
      kv("matched", e.matchedConditionId || (e.type === "block" && e.next ? "default" : null)),
      kv("next", e.next),
      kv("wrote", e.writes && Object.keys(e.writes).length ? e.writes : null),
      kv("error", e.error ? `${e.error.code}: ${e.error.message}` : null),
      kv("inputs", d.inputs)));
}

export function timeline(entries, label = "Trace") {
  return h("ol", { class: "timeline", "aria-label": label }, entries.map(entry));
}

export function outcome(run) {
  return h("div", { class: `outcome ${run.ok ? "ok" : "error"}` },
    h("p", {}, run.ok ? `OK in ${run.durationMs} ms: ` : `Failed in ${run.durationMs} ms: `,
      h("output", {}, run.ok ? JSON.stringify(run.result) : `${run.error && run.error.code}: ${run.error && run.error.message}`)),
    run.variables && Object.keys(run.variables).length
      ? h("details", {}, h("summary", {}, "Variables"), h("pre", {}, json(run.variables))) : null);
}
