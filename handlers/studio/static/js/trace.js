// The builder's test panel result: the answer, then the trace drawn on a read-only canvas of
// the definition that ran (js/canvas.js showRun: path taken, status and duration per block),
// with the same trace as a list folded under it.
import { runOverlay, showRun } from "./canvas.js";
import { clear, h } from "./dom.js";
import { outcome, timeline } from "./timeline.js";

/**
 * Fills `out` with a test run's result. `request` is what was sent to /tools/test-flow or
 * /tools/test-block; the drawing is of that definition (started at the chosen block).
 */
export function showTestRun(out, res, request) {
  const trace = Array.isArray(res.trace) ? res.trace : [];
  const started = trace.find((e) => e.type === "started");
  const root = started ? started.execId : null;
  const given = request.inputs && typeof request.inputs === "object" ? request.inputs : {};
  // An inline test run sets its inputs after the runtime recorded them (empty); show what
  // was given, not "inputs {}".
  const entries = trace.map((e) => (e === started && Object.keys(given).length
    ? { ...e, detail: { ...(e.detail || {}), inputs: given } } : e));
  let def = request.definition;
  if (!def && request.block) {
    const id = (started && started.blockId) || request.block.id || "block";
    def = { onboardingBlockId: id, blocks: { [id]: request.block } };
  }
  def = def ? { ...def, onboardingBlockId: request.startBlockId || def.onboardingBlockId } : null;
  const { status, path } = runOverlay(entries.filter((e) => e.execId === root));
  const canvasBox = h("div", { class: "canvas run-canvas", role: "group", "aria-label": "Test run on the flow" });
  const head = h("p", { class: "test-head" }, `Test run${request.startBlockId ? ` from ${request.startBlockId}` : ""}`,
    Object.keys(given).length ? ` · inputs ${JSON.stringify(given)}` : " · no inputs");
  // A test run of a saved tool is kept in the run history (when there is one): link its page.
  const runLink = res.inHistory && res.executionId
    ? h("p", {}, h("a", { href: `#/runs/${encodeURIComponent(res.executionId)}`, class: "run-link" }, "Open its run page"))
    : null;
  // clear(), not replaceChildren(): a missing part (no run page for a draft) is left out, where
  // replaceChildren would write it as the text "null".
  clear(out, head, outcome(res), runLink, def ? canvasBox : null,
    // Open: the list holds what the nodes cannot show (HTTP, writes, errors) without a click.
    h("details", { open: true }, h("summary", {}, "Trace as a list"), timeline(entries, "Test trace")));
  if (def) showRun(canvasBox, def, status, path); // `out` is on the page: the canvas can measure itself
}
