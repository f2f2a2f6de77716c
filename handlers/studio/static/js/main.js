// The shell: sign-in, navigation between pages (hash routes), sign-out.
import { ApiError, apiBase, configure, me, session, whenUnauthorized } from "./api.js";
import { button, clear, field, h } from "./dom.js";
import { builderPage } from "./pages/builder.js";
import { debugPage } from "./pages/debug.js";
import { executionPage, executionsPage } from "./pages/executions.js";
import { runPage, runsPage } from "./pages/run.js";
import { serverPage, serversPage } from "./pages/servers.js";
import { toolsPage, trashPage } from "./pages/tools.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const statusEl = document.getElementById("status");

/** @type {[RegExp, (ctx: any, ...args: string[]) => Promise<HTMLElement>][]} */
const ROUTES = [
  [/^#\/tools$/, toolsPage],
  [/^#\/new\/(.*)$/, (ctx, name) => builderPage(ctx, null, name)],
  [/^#\/tools\/([^/]+)$/, builderPage],
  [/^#\/trash$/, trashPage],
  [/^#\/servers$/, serversPage],
  [/^#\/servers\/([^/]+)$/, serverPage],
  [/^#\/executions$/, executionsPage],
  [/^#\/executions\/([^/]+)$/, executionPage],
  [/^#\/runs$/, runsPage],
  [/^#\/runs\/([^/]+)$/, runPage],
  [/^#\/debug$/, debugPage],
];

let principal = null;
let leaving = [];
let mounted = [];
let guard = null; // the page's "unsaved changes" question, or null
let here = ""; // the hash the page on screen was made for
let current = 0; // the latest navigation; a slower earlier one must not paint over it
let notice = null; // the timer that clears the notice

const NOTICE_MS = 6000; // long enough to read; then it stops covering the page

/** A short notice at the foot of the window, read out by screen readers, gone after a while. */
function say(text) {
  statusEl.textContent = text;
  clearTimeout(notice);
  notice = setTimeout(() => { statusEl.textContent = ""; }, NOTICE_MS);
}

function leave() {
  guard = null;
  for (const fn of leaving) { try { fn(); } catch { /* a page's cleanup never blocks the next */ } }
  leaving = [];
}

function signInForm(reason) {
  leave();
  principal = null;
  nav.hidden = true;
  who.hidden = true;
  const input = h("input", { type: "password", name: "key", autocomplete: "off", required: true, spellcheck: "false" });
  const error = h("p", { class: "error", role: "alert" }, reason || "");
  const form = h("form", { class: "card signin", "aria-labelledby": "signin-h" },
    h("h1", { id: "signin-h" }, "Sign in"),
    h("p", {}, "Paste an API key. `chatflow up` prints one; `chatflow keys create` makes more."),
    field("API key", input),
    error,
    h("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    session.set(input.value.trim());
    input.value = "";
    try {
      await start();
    } catch (err) {
      session.clear();
      // A wrong key at sign-in was never a session: say it was refused, not that one ended.
      error.textContent = !(err instanceof ApiError) ? String(err)
        : err.status === 401 ? `The API refused this key (${err.message}): check it and paste it again.`
          : `Refused: ${err.message}`;
    }
  });
  clear(main, form);
  input.focus();
}

async function start() {
  principal = await me();
  nav.hidden = false;
  who.hidden = false;
  document.getElementById("who-text").textContent =
    `${principal.name || principal.keyId || "key"} · ${principal.role}${principal.workspace ? ` · ${principal.workspace}` : ""}`;
  if (!location.hash || location.hash === "#" || location.hash === "#main") location.hash = "#/tools";
  else await route();
}

async function route() {
  if (!principal) return;
  leave();
  const mine = ++current;
  const hash = location.hash;
  here = hash;
  // "#/runs?status=error": the part after "?" is the page's own state (its filters), kept in the
  // address so Back returns to it.
  const [where, query = ""] = hash.split("?");
  for (const [re, page] of ROUTES) {
    const m = where.match(re);
    if (!m) continue;
    const ctx = {
      me: principal,
      canWrite: principal.role === "admin" || principal.role === "editor",
      query: new URLSearchParams(query),
      say,
      onLeave: (fn) => leaving.push(fn),
      afterMount: (fn) => mounted.push(fn),
      guard: (fn) => { guard = fn; },
      // A new address for the page on screen (a new tool's first save) without re-rendering it.
      replace: (to) => { history.replaceState(null, "", to); here = to; },
      go: (to) => { location.hash = to; },
    };
    mounted = [];
    clear(main, h("p", {}, "Loading…"));
    for (const a of nav.querySelectorAll("a")) {
      if (a.getAttribute("href") === `#/${where.split("/")[1]}`) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    try {
      const node = await page(ctx, ...m.slice(1).map(decodeURIComponent));
      if (mine !== current) return;
      clear(main, node);
      for (const fn of mounted.splice(0)) fn();
      const heading = main.querySelector("h1");
      document.title = `${heading ? heading.textContent : "Studio"} · chatflow Studio`;
    } catch (err) {
      if (mine !== current || (err instanceof ApiError && err.status === 401)) return;
      clear(main, h("h1", {}, "Something went wrong"), h("p", { class: "error", role: "alert" }, String(err.message || err)),
        button("Back to tools", () => { location.hash = "#/tools"; }));
    }
    main.focus({ preventScroll: true });
    return;
  }
  location.hash = "#/tools";
}

document.getElementById("sign-out").addEventListener("click", () => {
  const question = guard && guard();
  if (question && !window.confirm(question)) return;
  session.clear();
  signInForm("Signed out.");
});

// A revoked or expired key while signed in ends the session; a wrong one at sign-in is answered
// by the sign-in form itself.
whenUnauthorized(() => { if (principal) signInForm("Your session ended: the API refused the key."); });
window.addEventListener("hashchange", () => {
  if (location.hash === "#main") return;
  const question = guard && guard();
  // Staying: the address goes back without a hashchange, so the page and its edits stay.
  if (question && !window.confirm(question)) { history.replaceState(null, "", here); return; }
  route();
});

async function boot() {
  await configure();
  document.getElementById("api-docs").setAttribute("href", `${apiBase()}/docs`);
  if (!session.key) return signInForm("");
  try { await start(); } catch (err) {
    session.clear(); // a key kept from before (a reload) that the API no longer takes: that session ended
    signInForm(err instanceof ApiError && err.status === 401 ? "Your session ended: the API refused the key." : String(err.message || err));
  }
}

boot();
