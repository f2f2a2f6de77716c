// The builder page's panels, in the order they are drawn, each in its slot: "side" beside the
// definition's JSON, "below" under it. A panel is made once per page from the builder's env
// (the store, the problems, the tool, the page context) and keeps itself up to date by
// subscribing to the store; it returns its element, or null when it has nothing to show
// (a viewer's test panel, a new tool's runs). A new panel (Versions, say) is one entry here.
import { api } from "../api.js";
import { chart } from "../chart.js";
import { h } from "../dom.js";
import { casesPanel } from "../cases.js";
import { recentRuns } from "../pages/tools.js";
import { versionsPanel } from "../versions.js";
import { problemsPanel } from "./problems.js";
import { agentsPanel, inputsPanel } from "./sidePanels.js";
import { testPanel } from "./testPanel.js";

/**
 * @typedef {object} BuilderEnv
 * @property {import("./store.js").Store} store
 * @property {import("./problems.js").Problems} problems
 * @property {any} ctx  the page context (js/main.js)
 * @property {boolean} rw  an editor's or admin's key
 * @property {any} schemas
 * @property {{tools: any[], servers: any[], creds: any[]}} lookups
 * @property {{id: string|null}} tool  null until a new tool's first save
 * @property {any} saved  the tool as the API had it when the page opened
 * @property {(path: string) => void} jump  goes to a problem path's control (or JSON)
 * @property {() => void} flush  applies what is typed in the JSON view
 * @property {((t: any) => void)[]} published  told of each publish or rollback (the tool as published)
 *
 * @typedef {{ slot: "side"|"below", make: (env: BuilderEnv) => (HTMLElement|null|Promise<HTMLElement|null>) }} Panel
 */

/** The last seven days' chart (a saved tool's). @param {BuilderEnv} env */
async function daysPanel({ tool }) {
  if (tool.id === null) return null;
  const days = await api("GET", `/tools/${encodeURIComponent(tool.id)}/daily`).then((r) => r.days, () => null);
  return days ? h("section", { "aria-labelledby": "days-h" }, h("h2", { id: "days-h" }, "Last seven days"), chart(days)) : null;
}

/** @type {Panel[]} */
export const PANELS = [
  { slot: "side", make: (env) => (env.rw ? problemsPanel(env) : null) },
  { slot: "side", make: inputsPanel },
  { slot: "side", make: agentsPanel },
  { slot: "below", make: testPanel },
  { slot: "below", make: casesPanel },
  { slot: "below", make: versionsPanel },
  { slot: "below", make: ({ tool }) => (tool.id === null ? null : recentRuns(tool.id)) },
  { slot: "below", make: daysPanel },
];

/** Every panel made, by slot. @param {BuilderEnv} env */
export async function makePanels(env) {
  const made = await Promise.all(PANELS.map((p) => p.make(env)));
  const slot = (name) => made.filter((el, i) => el && PANELS[i].slot === name);
  return { side: slot("side"), below: slot("below") };
}
