// Server-sent events read with fetch (EventSource cannot send an Authorization header).
// It keeps the last entry id and reconnects with Last-Event-ID, and drops anything not newer,
// so a reconnect gives neither duplicates nor gaps.
import { authHeaders } from "./api.js";

/** Stream entry ids "ms-seq" compared as numbers. */
export function newer(a, b) {
  if (!b) return true;
  const [am, as] = String(a).split("-").map(BigInt);
  const [bm, bs] = String(b).split("-").map(BigInt);
  return am > bm || (am === bm && as > bs);
}

export function parseFrame(frame) {
  const out = { id: null, event: "message", data: [] };
  for (const line of frame.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const name = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (name === "id") out.id = value;
    else if (name === "event") out.event = value;
    else if (name === "data") out.data.push(value);
  }
  return { ...out, data: out.data.join("\n") };
}

/** follow(url, {onEvent, onState, onUnauthorized}, lastId) -> {stop(), last} */
export function follow(url, handlers, last = null) {
  const ctl = { last, stopped: false, abort: null };
  const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  async function once() {
    const abort = new AbortController();
    ctl.abort = abort;
    const headers = authHeaders({ Accept: "text/event-stream" });
    if (ctl.last) headers["Last-Event-ID"] = ctl.last;
    const res = await fetch(url, { headers, signal: abort.signal, cache: "no-store", credentials: "omit" });
    if (res.status === 401) { ctl.stopped = true; handlers.onUnauthorized(); return; }
    if (!res.ok) throw new Error(`the stream answered ${res.status}`);
    handlers.onState("live");
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let m;
      while ((m = buf.match(/\r?\n\r?\n/))) {
        const frame = parseFrame(buf.slice(0, m.index));
        buf = buf.slice(m.index + m[0].length);
        if (frame.id === null || !newer(frame.id, ctl.last)) continue;
        ctl.last = frame.id;
        if (frame.event === "debug") handlers.onEvent(frame.id, JSON.parse(frame.data));
      }
    }
  }
  (async () => {
    while (!ctl.stopped) {
      try { await once(); } catch (err) { if (ctl.stopped) return; handlers.onState(`reconnecting (${err.message})`); }
      if (ctl.stopped) return;
      handlers.onState("reconnecting");
      await wait(1000);
    }
  })();
  return {
    stop() { ctl.stopped = true; if (ctl.abort) ctl.abort.abort(); handlers.onState("paused"); },
    get last() { return ctl.last; },
  };
}
