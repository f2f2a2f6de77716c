// The JSON API, called with the signed-in key as a bearer token. The key lives in
// sessionStorage: this origin and this tab only, gone when the tab closes, never in a URL.
// No cookies are sent (credentials: "omit"), so another site cannot make requests as us (no CSRF).

const KEY = "chatflow.studio.key";
let base = "/api";
/** @type {() => void} */
let onUnauthorized = () => {};

export class ApiError extends Error {
  constructor(status, body) {
    const message = (body && typeof body === "object" && body.message) || String(body || status);
    super(message);
    this.status = status;
    this.body = body && typeof body === "object" ? body : { message };
  }
  get problems() { return this.body.problems || []; }
}

export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  set(key) { sessionStorage.setItem(KEY, key); },
  clear() { sessionStorage.removeItem(KEY); },
};

export async function configure() {
  const res = await fetch("config.json", { cache: "no-store", credentials: "omit" });
  base = (await res.json()).apiBase;
  return base;
}

export function apiBase() { return base; }

/** `fn()` runs when the API refuses the key (401): a revoked or expired key, or a wrong one. */
export function whenUnauthorized(fn) { onUnauthorized = fn; }

/** @param {Record<string, string>} [extra] @returns {Record<string, string>} */
export function authHeaders(extra = {}) {
  const headers = { ...extra };
  const key = session.key;
  if (key) headers.Authorization = `Bearer ${key}`;
  return headers;
}

/** api("GET", "/tools"); a string body is sent as is with `type`, anything else as JSON. */
export async function api(method, path, body, type) {
  const headers = authHeaders({ Accept: "application/json" });
  let payload;
  if (body !== undefined) {
    payload = typeof body === "string" ? body : JSON.stringify(body);
    headers["Content-Type"] = typeof body === "string" ? (type || "text/plain") : "application/json";
  }
  const res = await fetch(base + path, {
    method, headers, body: payload, cache: "no-store", credentials: "omit",
  });
  if (res.status === 401) {
    session.clear();
    onUnauthorized();
    throw new ApiError(401, await body_of(res));
  }
  const data = await body_of(res);
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

async function body_of(res) {
  const text = await res.text();
  try { return text ? JSON.parse(text) : null; } catch { return text; }
}

/** Who the key is. Before access control exists (no /me route), the API is open. */
export async function me() {
  try {
    return await api("GET", "/me");
  } catch (err) {
    if (err.status === 404) return { name: "open API (no access control)", role: "admin", workspace: "" };
    throw err;
  }
}
