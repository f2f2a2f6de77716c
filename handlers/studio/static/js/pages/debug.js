// Live debug: a contact's debug flag, and its debug stream as it happens.
import { api, apiBase, ApiError } from "../api.js";
import { button, field, h, json } from "../dom.js";
import { follow } from "../sse.js";
import { refusal } from "./tools.js";

const enc = encodeURIComponent;

function describe(ev) {
  const p = ev.payload || {};
  if (ev.type === "action_start") return `▶ ${p.publishedToolId || ""} started`;
  if (ev.actionType === "executeTool") return p.error ? `✖ ${p.error.code}: ${p.error.message}` : `■ result ${JSON.stringify(p.result ?? "")}`;
  const parts = [`${p.error ? "✖ error" : "✓ ok"} · ${p.blockId} [${p.blockType}] · ${p.durationMs ?? 0} ms`];
  if (p.depth) parts.push(`(${p.publishedToolId || p.toolId}, depth ${p.depth})`);
  if (p.method) parts.push(`${p.method} ${p.url || ""} → ${p.status ?? "—"}`);
  if (p.matchedConditionId) parts.push(`matched ${p.matchedConditionId}`);
  return parts.join(" · ");
}

export function debugEntry(id, ev) {
  const p = ev.payload || {};
  const depth = Math.min(Number(p.depth) || 0, 6);
  return h("li", { class: `event depth-${depth} status-${p.error ? "error" : "ok"}`, "data-id": id },
    h("p", { class: "head" }, h("time", {}, String(ev.occurredAt || "").slice(11, 23)), " ", describe(ev),
      // The run's page reads the history, which has the run once it finished.
      ev.executionId ? [" ", h("a", { href: `#/runs/${enc(ev.executionId)}`, class: "run-link" }, `run ${ev.executionId}`)] : null),
    p.error ? h("p", { class: "error" }, typeof p.error === "string" ? p.error : `${p.error.code}: ${p.error.message}`) : null,
    h("details", {}, h("summary", {}, "Event"), h("pre", {}, json(ev))));
}

export async function debugPage(ctx) {
  const contact = h("input", { type: "text", name: "contact", autocomplete: "off", required: true });
  const body = h("div", {});
  let stream = null;
  ctx.onLeave(() => stream && stream.stop());
  const form = h("form", { class: "inline", "aria-label": "Contact" }, field("Contact id", contact), h("button", { type: "submit" }, "Open"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (stream) stream.stop();
    const id = contact.value.trim();
    if (!id) return;
    body.replaceChildren(await contactView(ctx, id, (s) => { stream = s; }));
  });
  return h("section", { "aria-labelledby": "dbg-h" },
    h("h1", { id: "dbg-h" }, "Live debug"),
    h("p", { class: "muted" }, "Switch debug on for a contact; its executions then send their events here as they happen."),
    form, body);
}

async function contactView(ctx, id, keep) {
  const state = await api("GET", `/debug/${enc(id)}`);
  const out = h("div", { "aria-live": "polite" });
  const live = h("span", { class: "badge" }, "connecting");
  const events = h("ol", { class: "timeline", "aria-label": `Debug events of ${id}` });
  const flag = h("input", { type: "checkbox", id: "debug-flag", checked: state.enabled });
  flag.addEventListener("change", async () => {
    try { await api(flag.checked ? "PUT" : "DELETE", `/debug/${enc(id)}`); ctx.say(`Debug ${flag.checked ? "on" : "off"} for ${id}`); }
    catch (err) { if (err instanceof ApiError) { flag.checked = !flag.checked; out.replaceChildren(refusal(err)); } }
  });
  const start = (last) => {
    const s = follow(`${apiBase()}/debug/${enc(id)}/stream`, {
      onEvent: (eid, ev) => events.append(debugEntry(eid, ev)),
      onState: (t) => { live.textContent = t; },
      onUnauthorized: () => api("GET", "/tools").catch(() => {}),
    }, last);
    keep(s);
    return s;
  };
  let stream = start(null);
  const pause = button("Pause", () => {
    if (pause.textContent === "Pause") { stream.stop(); pause.textContent = "Resume"; }
    else { stream = start(stream.last); pause.textContent = "Pause"; }
  });
  return h("section", { "aria-labelledby": "contact-h" },
    h("h2", { id: "contact-h" }, `Contact ${id}`),
    ctx.canWrite ? h("div", { class: "check" }, flag, h("label", { for: "debug-flag" }, "Debug on for this contact"))
      : h("p", {}, state.enabled ? "Debug is on for this contact." : "Debug is off for this contact."),
    h("p", {}, "Stream: ", live, " ", pause, " ", button("Clear", () => events.replaceChildren())),
    out, events);
}
