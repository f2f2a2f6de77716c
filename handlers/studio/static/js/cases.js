// A tool's saved test cases (docs/registry.md "Test cases"): listed with what each expects and
// what it lacks, run against the draft with the failures' differences and runs; and the publish
// gate's refusal shown beside the Publish button, with "Publish anyway" (a note is required),
// or beside a rollback (a rollback is a publish), with "Roll back anyway".
import { api, ApiError } from "./api.js";
import { confirmDialog } from "./dialog.js";
import { button, field, h } from "./dom.js";
import { refusal } from "./pages/tools.js";

const enc = encodeURIComponent;

function shown(value) { const text = JSON.stringify(value); return text && text.length > 120 ? `${text.slice(0, 119)}…` : String(text); }

function difference(d) {
  return `${d.field}: expected ${shown(d.expected)}, got ${shown(d.actual)}${d.note ? ` (${d.note})` : ""}`;
}

function runLink(executionId) {
  return executionId ? h("a", { href: `#/runs/${enc(executionId)}` }, "open its run") : null;
}

/** One failing case: its name, its differences, and the run it produced. */
function failure(c) {
  return h("li", {}, h("strong", {}, c.name || c.id), ` (${c.id}) `, runLink(c.executionId),
    h("ul", { "aria-label": `Differences of ${c.name || c.id}` }, (c.differences || []).map((d) => h("li", {}, difference(d)))));
}

/** What the gate's refusal says of a publish of the draft (`gateFailures`' `words`). */
export const PUBLISH_WORDS = { not: "Not published", on: "this draft", force: "Publish anyway",
  title: "Publish past failing test cases?", reason: "Note (why publish now)" };

/**
 * The gate's 409 as a list beside Publish (or a rollback: `words`); `force(note)` goes ahead
 * anyway, with a note (`note`: the one it starts with).
 * @param {ApiError} err
 * @param {{force?: (note: string) => void, words?: typeof PUBLISH_WORDS, note?: string}} options
 */
export function gateFailures(err, { force, words = PUBLISH_WORDS, note = "" } = {}) {
  const body = err.body || {};
  const failures = body.failures || [];
  return h("div", { class: "error gate", role: "alert" },
    h("p", {}, `${words.not}: ${failures.length} saved test case(s) fail on ${words.on} (${body.passed || 0} pass).`),
    h("ul", { "aria-label": "Failing test cases" }, failures.map(failure)),
    force ? button(`${words.force}…`, async () => {
      const why = await confirmDialog({ title: words.title,
        body: [h("p", {}, `${failures.length} case(s) fail. The version keeps them and your note.`)],
        confirm: words.force, danger: true, reason: words.reason, reasonValue: note });
      if (why !== null) force(why);
    }) : null);
}

function expectation(c) {
  const e = c.expect || {};
  const parts = [];
  if (e.errorCode) parts.push(`fails with ${e.errorCode}`);
  else parts.push("succeeds");
  if (e.result !== undefined) parts.push(`returns ${shown(e.result)}`);
  if (e.resultMatches) parts.push(`matches /${e.resultMatches}/`);
  if (e.path) parts.push(`visits ${e.path.join(" → ")}`);
  const mocks = Object.keys(c.mocks || {});
  if (mocks.length) parts.push(`mocks ${mocks.join(", ")}`);
  return parts.join(", ");
}

/**
 * The Test cases panel (js/builder/panels.js); reloaded after a publish (``env.published``).
 * @param {{ctx: any, tool: {id: string|null}, rw: boolean, published?: ((t: any) => void)[]}} env
 */
export function casesPanel(env) {
  const { ctx, tool, rw } = env;
  if (tool.id === null) return null;
  const toolId = tool.id;
  const listBox = h("div", {});
  const out = h("div", { "aria-live": "polite" });

  async function load() {
    const cases = await api("GET", `/tools/${enc(toolId)}/tests`);
    listBox.replaceChildren(cases.length
      ? h("ul", { class: "cases", "aria-label": "Saved test cases" }, cases.map((c) => h("li", {},
        h("strong", {}, c.name), ` (${c.id}): ${expectation(c)}`,
        (c.needs || []).length ? h("ul", { class: "warnings", "aria-label": `What ${c.name} lacks` },
          c.needs.map((n) => h("li", {}, n))) : null,
        rw ? button("Delete", () => remove(c), { "aria-label": `Delete test case ${c.name}` }) : null)))
      : h("p", { class: "muted" }, "No saved test cases. Save one from a run's page (\"Save as test case\")."));
  }

  async function remove(c) {
    const ok = await confirmDialog({ title: `Delete test case ${c.name}?`, confirm: "Delete", danger: true,
      body: [h("p", {}, "Publishing no longer checks it.")] });
    if (ok === null) return;
    await api("DELETE", `/tools/${enc(toolId)}/tests/${enc(c.id)}`);
    await load();
  }

  async function runAll() {
    out.replaceChildren(h("p", {}, "Running…"));
    try {
      const report = await api("POST", `/tools/${enc(toolId)}/tests/run`, {});
      out.replaceChildren(h("p", { class: report.failed ? "error" : "ok", role: "status" },
        `${report.passed} passed, ${report.failed} failed on the draft.`),
      h("ul", { "aria-label": "Test results" }, report.cases.map((c) => c.passed
        ? h("li", {}, `PASS ${c.name} (${c.id}) `, runLink(c.executionId))
        : failure({ ...c, name: `FAIL ${c.name}` }))));
      ctx.say(`${report.passed} passed, ${report.failed} failed.`);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.replaceChildren(refusal(err));
    }
  }

  const section = h("section", { class: "card cases-panel", "aria-labelledby": "cases-h" },
    h("h2", { id: "cases-h" }, "Test cases"), listBox,
    rw ? button("Run test cases", runAll) : null, out);
  if (env.published) env.published.push(() => { load().catch(() => {}); });
  ctx.afterMount(() => { load().catch(() => {}); });
  return section;
}

/** "Save as test case" on a run's page: the run's inputs, its blocks' answers as mocks. */
export function saveAsCase(ctx, run) {
  const name = h("input", { type: "text", name: "caseName", value: `from run ${run.executionId.slice(0, 18)}` });
  const out = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "save-case", "aria-label": "Save as test case" },
    field("Test case name", name),
    h("button", { type: "submit" }, "Save test case"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const c = await api("POST", `/executions/${enc(run.executionId)}/test-case`, { name: name.value.trim() || undefined });
      out.replaceChildren(h("div", { class: "ok", role: "status" },
        h("p", {}, `Saved test case ${c.name} (${c.id}) of tool `, h("a", { href: `#/tools/${enc(c.toolId)}` }, c.toolId), "."),
        (c.notes || []).length ? h("ul", { "aria-label": "Notes" }, c.notes.map((n) => h("li", {}, n))) : null,
        (c.needs || []).length ? [h("p", {}, "It lacks what the history keeps masked; put the values in before relying on it:"),
          h("ul", { "aria-label": "What the case lacks" }, c.needs.map((n) => h("li", {}, n)))] : null));
      ctx.say(`Saved test case ${c.name}.`);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.replaceChildren(refusal(err));
    }
  });
  return h("details", { class: "save-case-box" }, h("summary", {}, "Save as test case"), form);
}
