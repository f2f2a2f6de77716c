// Integration servers (usedBy, metrics, endpoints, headers with write-only secrets, OpenAPI
// import, endpoint test) and LLM credentials (keys shown masked, as the API sends them).
import { api, ApiError } from "../api.js";
import { confirmDialog } from "../dialog.js";
import { button, field, h, json, table, when } from "../dom.js";
import { refusal } from "./tools.js";

const enc = encodeURIComponent;

function form(label, controls, submit, onsubmit) {
  const f = h("form", { class: "card", "aria-label": label }, h("h2", {}, label), controls, h("button", { type: "submit" }, submit));
  f.addEventListener("submit", (ev) => { ev.preventDefault(); onsubmit(f); });
  return f;
}

async function guarded(out, fn) {
  try { await fn(); } catch (err) { if (!(err instanceof ApiError)) throw err; out.replaceChildren(refusal(err)); }
}

export async function serversPage(ctx) {
  const [servers, creds] = await Promise.all([api("GET", "/integration-servers"), api("GET", "/llm-credentials")]);
  const out = h("div", { "aria-live": "polite" });
  const rows = servers.map((srv) => h("tr", {},
    h("th", { scope: "row" }, h("a", { href: `#/servers/${enc(srv.id)}` }, srv.name)),
    h("td", {}, srv.baseUrl),
    h("td", { class: "num" }, String((srv.metrics || {}).endpoints ?? (srv.endpoints || []).length)),
    h("td", {}, (srv.usedBy || []).length ? (srv.usedBy || []).map((u) => u.name || u.toolId).join(", ") : "—")));
  const credRows = creds.map((c) => h("tr", {},
    h("th", { scope: "row" }, c.name), h("td", {}, c.provider || "openai"), h("td", {}, c.baseUrl || "—"),
    h("td", {}, h("code", {}, c.apiKey || "••••••••"))));
  let create = null, createCred = null;
  if (ctx.canWrite) {
    const name = h("input", { type: "text", name: "name", required: true });
    const baseUrl = h("input", { type: "url", name: "baseUrl", required: true, placeholder: "https://api.example.com/v1" });
    create = form("New server", [field("Server name", name), field("Base URL", baseUrl)], "Create server", () => guarded(out, async () => {
      const srv = await api("POST", "/integration-servers", { name: name.value, baseUrl: baseUrl.value });
      ctx.go(`#/servers/${enc(srv.id)}`);
    }));
    const cname = h("input", { type: "text", name: "credName", required: true });
    const ckey = h("input", { type: "password", name: "apiKey", required: true, autocomplete: "off" });
    createCred = form("New LLM credential", [field("Credential name", cname), field("Provider API key", ckey, "Write-only: stored encrypted, never shown again.")],
      "Add credential", () => guarded(out, async () => {
        await api("POST", "/llm-credentials", { name: cname.value, apiKey: ckey.value });
        ckey.value = "";
        ctx.go("#/servers"); window.dispatchEvent(new HashChangeEvent("hashchange"));
      }));
  }
  return h("section", { "aria-labelledby": "srv-h" },
    h("h1", { id: "srv-h" }, "Integration servers"), out,
    table("Integration servers", ["Name", "Base URL", "Endpoints", "Used by"], rows, "No integration servers yet."),
    create,
    h("h2", {}, "LLM credentials"),
    table("LLM credentials", ["Name", "Provider", "Base URL", "API key"], credRows, "No LLM credentials yet."),
    createCred);
}

export async function serverPage(ctx, serverId) {
  const srv = await api("GET", `/integration-servers/${enc(serverId)}`);
  const out = h("div", { "aria-live": "polite" });
  const reload = () => window.dispatchEvent(new HashChangeEvent("hashchange"));
  const headerRows = (srv.headers || []).map((hd) => h("tr", {},
    h("th", { scope: "row" }, hd.name),
    h("td", {}, hd.secret ? "•••••••• (secret, write-only)" : hd.value)));
  const epRows = (srv.endpoints || []).map((ep) => h("tr", {},
    h("th", { scope: "row" }, ep.name), h("td", {}, ep.method), h("td", {}, h("code", {}, ep.path)),
    ctx.canWrite ? h("td", {}, button("Test", () => out.replaceChildren(endpointTest(serverId, ep, out)),
      { "aria-label": `Test ${ep.name}` })) : null));
  const epHeaders = ["Name", "Method", "Path"];
  if (ctx.canWrite) epHeaders.push("Actions");
  const users = srv.usedBy || [];
  const remove = ctx.canWrite ? button("Delete server", async () => {
    const ok = await confirmDialog({ title: `Delete ${srv.name}?`, confirm: "Delete server", danger: true,
      body: users.length
        ? [h("p", {}, "These tools call it; deleting is refused while they do. Change them first:"),
          h("ul", { "aria-label": "Tools using it" }, users.map((u) => h("li", {}, `${u.name || u.toolId}${u.toolId ? ` (${u.toolId})` : ""}`)))]
        : [h("p", {}, "No tool uses it. Its endpoints and headers go with it.")] });
    if (ok === null) return;
    await guarded(out, async () => { await api("DELETE", `/integration-servers/${enc(serverId)}`); ctx.go("#/servers"); });
  }, { class: "danger" }) : null;
  const parts = [
    h("div", { class: "bar" }, h("h1", { id: "one-srv-h" }, srv.name), remove),
    h("p", { class: "muted" }, srv.baseUrl, " · used by ", (srv.usedBy || []).map((u) => u.name || u.toolId).join(", ") || "no tool"),
    out,
    h("h2", {}, "Calls: circuit, limits, retries"),
    edgeCard(srv),
    h("h2", {}, "Headers"),
    table("Headers", ["Header", "Value"], headerRows, "No headers."),
  ];
  if (ctx.canWrite) {
    const hname = h("input", { type: "text", name: "headerName", required: true });
    const hvalue = h("input", { type: "password", name: "headerValue", required: true, autocomplete: "off" });
    const secret = h("input", { type: "checkbox", name: "secret", checked: true, id: "hdr-secret" });
    secret.addEventListener("change", () => { hvalue.type = secret.checked ? "password" : "text"; });
    parts.push(form("Add a header", [field("Header name", hname), field("Header value", hvalue),
      h("div", { class: "check" }, secret, h("label", { for: "hdr-secret" }, "Secret (write-only, stored encrypted)"))],
    "Add header", () => guarded(out, async () => {
      const headers = [...(srv.headers || []).map((x) => ({ name: x.name, value: x.value, secret: !!x.secret })),
        { name: hname.value, value: hvalue.value, secret: secret.checked }];
      await api("PATCH", `/integration-servers/${enc(serverId)}`, { headers });
      hvalue.value = "";
      reload();
    })));
  }
  parts.push(h("h2", {}, "Endpoints"), table("Endpoints", epHeaders, epRows, "No endpoints yet."));
  if (ctx.canWrite) {
    const spec = h("textarea", { name: "spec", class: "code", rows: 8, spellcheck: "false" });
    const file = h("input", { type: "file", name: "specFile", accept: ".yaml,.yml,.json,application/json,application/yaml" });
    file.addEventListener("change", async () => { if (file.files[0]) spec.value = await file.files[0].text(); });
    parts.push(form("Import OpenAPI", [field("OpenAPI spec (YAML or JSON)", spec), field("Or upload a file", file)], "Import",
      () => guarded(out, async () => {
        const res = await api("POST", `/integration-servers/${enc(serverId)}/import-openapi`, spec.value, "application/yaml");
        ctx.say(`Imported ${res.imported} endpoint(s)`);
        reload();
      })));
  }
  return h("article", { "aria-labelledby": "one-srv-h" }, parts);
}

const CIRCUIT = { closed: "Closed: calls go through",
  half_open: "Half-open: one probe call is testing the server",
  open: "Open: calls fail at once with circuit_open, without reaching the server" };

function item(term, value) { return h("div", { class: "kv" }, h("dt", {}, term), h("dd", {}, value)); }

/** The server's circuit as every worker sees it (GET /integration-servers/{id} `circuit`), and
 * the limits, breaker, default retry and idempotency header its calls go through. */
function edgeCard(srv) {
  const c = srv.circuit || { state: "closed", failures: 0, openedAt: null };
  const l = srv.limits, b = srv.circuitBreaker, r = srv.retry;
  const limits = l ? [l.requestsPerSecond ? `${l.requestsPerSecond}/s (burst ${l.burst ?? "one second's"})` : null,
    l.maxConcurrent ? `at most ${l.maxConcurrent} at once` : null].filter(Boolean).join(", ") : "none";
  const header = srv.idempotencyHeader === null ? "none (off)" : srv.idempotencyHeader || "Idempotency-Key";
  return h("section", { class: "card", "aria-label": "Circuit and limits" }, h("dl", { class: "kv-list" },
    item("Circuit", h("span", { class: c.state === "closed" ? "ok" : "error", "data-state": c.state }, CIRCUIT[c.state] || c.state)),
    item("Recent failures", String(c.failures ?? 0)),
    c.openedAt ? item("Opened at", when(c.openedAt)) : null,
    item("Circuit breaker", b ? `opens after ${b.failureThreshold ?? 5} failures in ${(b.windowMs ?? 30000) / 1000} s, probes after ${(b.cooldownMs ?? 15000) / 1000} s` : "none"),
    item("Limits", limits),
    item("Default retry", r ? `up to ${r.maxAttempts ?? 3} attempts` : "none (a block's own policy only)"),
    item("Idempotency header", header)));
}

/** An endpoint's Test: a field per param, the body template, variables for {{…}} in the params, then the
 * answer as status, call, duration, headers (secret ones masked by the API) and body (JSON indented). */
function endpointTest(serverId, ep, out) {
  const params = (ep.params || []).map((p) => [p, h("input", { type: "text", name: p.name, placeholder: p.description || "" })]);
  // The body template is sent as written, with the body params laid over it (the runtime does
  // not interpolate the template): variables only fill {{…}} in the param values typed here.
  const variables = h("textarea", { name: "variables", class: "code", rows: 3, value: "{}" });
  const result = h("div", { "aria-live": "polite" });
  const run = () => guarded(result, async () => {
    let vars;
    try { vars = JSON.parse(variables.value || "{}"); } catch (err) {
      result.replaceChildren(h("p", { class: "error", role: "alert" }, `Variables: ${err.message}`));
      return;
    }
    const paramMappings = params.filter(([, input]) => input.value !== "").map(([p, input]) => ({ name: p.name, in: p.in, value: input.value }));
    result.replaceChildren(h("p", {}, "Calling…"));
    const res = await api("POST", `/integration-servers/${enc(serverId)}/endpoints/${enc(ep.id)}/test`, { paramMappings, variables: vars });
    let body = res.body;
    if (typeof body === "string") { try { body = JSON.parse(body); } catch { /* not JSON: shown as text */ } }
    result.replaceChildren(h("dl", { class: "kv-list" },
      h("div", { class: "kv" }, h("dt", {}, "Status"), h("dd", { class: res.ok ? "ok" : "error" }, `Status ${res.status ?? "—"}${res.error ? ` · ${res.error.code}: ${res.error.message}` : ""}`)),
      h("div", { class: "kv" }, h("dt", {}, "Call"), h("dd", {}, `${res.method} ${res.url}`)),
      h("div", { class: "kv" }, h("dt", {}, "Duration"), h("dd", {}, `${res.durationMs ?? "—"} ms`)),
      h("div", { class: "kv" }, h("dt", {}, "Headers"), h("dd", {}, table("Response headers", ["Header", "Value"],
        (res.headers || []).map((hd) => h("tr", {}, h("th", { scope: "row" }, hd.name), h("td", {}, h("code", {}, hd.value)))),
        "No headers (the call got no answer)."))),
      h("div", { class: "kv" }, h("dt", {}, "Body"), h("dd", {}, h("pre", {}, typeof body === "string" ? body : json(body))))));
  });
  const byIn = (where) => params.filter(([p]) => p.in === where).map(([p, input]) => field(`${p.name} (${where})${p.required ? " *" : ""}`, input, p.description));
  return h("section", { class: "card", "aria-label": `Test of ${ep.name}` }, h("h3", {}, `Test of ${ep.name}: ${ep.method} ${ep.path}`),
    params.length ? [byIn("route"), byIn("query"), byIn("body")] : h("p", { class: "muted" }, "This endpoint declares no parameters."),
    ep.bodyTemplate !== null && ep.bodyTemplate !== undefined
      ? h("figure", { class: "body-template" }, h("figcaption", {}, "Body template: sent as written, with the body parameters above laid over it"),
        h("pre", {}, typeof ep.bodyTemplate === "string" ? ep.bodyTemplate : json(ep.bodyTemplate))) : null,
    field("Variables (JSON)", variables, "Values for {{variables}} in the parameters above."),
    button("Run test", run, { class: "primary" }), result);
}
