// A tool's seven days: runs per day as bars, average duration as a line, success rate as text;
// the same numbers in a table for screen readers and for copying.
import { h, pct, s, table } from "./dom.js";

export function chart(days) {
  const W = 60, GAP = 14, H = 120, TOP = 20;
  const maxRuns = Math.max(1, ...days.map((d) => d.runs));
  const maxMs = Math.max(1, ...days.map((d) => d.avgMs));
  const width = days.length * (W + GAP) + GAP;
  const bars = days.map((d, i) => {
    const bh = Math.round((d.runs / maxRuns) * H);
    const x = GAP + i * (W + GAP);
    return s("g", { class: "day" },
      s("title", {}, d.runs ? `${d.day}: ${d.runs} runs, ${d.avgMs} ms average, ${pct(d.successRate)} success` : `${d.day}: no runs`),
      s("rect", { x, y: TOP + H - bh, width: W, height: Math.max(bh, 1), class: "bar" }),
      s("text", { x: x + W / 2, y: TOP + H - bh - 4, "text-anchor": "middle" }, String(d.runs)),
      s("text", { x: x + W / 2, y: TOP + H + 16, "text-anchor": "middle", class: "sub" }, d.day.slice(5)),
      s("text", { x: x + W / 2, y: TOP + H + 32, "text-anchor": "middle", class: "sub" }, d.runs ? pct(d.successRate) : "—"));
  });
  // The average line joins only days with runs: a day without runs has no duration, not 0 ms.
  const points = days.map((d, i) => (d.runs ? `${GAP + i * (W + GAP) + W / 2},${TOP + H - Math.round((d.avgMs / maxMs) * H)}` : null))
    .filter(Boolean).join(" ");
  const svg = s("svg", { viewBox: `0 0 ${width} ${TOP + H + 40}`, width, height: TOP + H + 40, role: "img", "aria-label": "Runs per day (bars) and average duration (line), last seven days" },
    bars, s("polyline", { points, class: "avg" }));
  const rows = days.map((d) => h("tr", {}, h("th", { scope: "row" }, d.day), h("td", { class: "num" }, String(d.runs)),
    h("td", { class: "num" }, d.runs ? String(d.avgMs) : "—"), h("td", { class: "num" }, d.runs ? pct(d.successRate) : "—")));
  return h("figure", { class: "chart" }, svg,
    h("figcaption", {}, "Bars: runs per day. Line: average duration. Below: success rate."),
    h("details", {}, h("summary", {}, "The numbers"), table("Last seven days", ["Day", "Runs", "Avg ms", "Success rate"], rows)));
}
