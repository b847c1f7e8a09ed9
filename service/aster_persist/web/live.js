// Server-Sent Events over fetch (so the token can be sent), resumed with Last-Event-ID
// after any break; and the change feed every view shares, shown by the live badge and,
// while the daemon is away, by a banner. When it is back, the view is drawn again.

import { headers } from "./api.js";
import { askToken, token } from "./token.js";

const liveBadge = document.getElementById("live");
const banner = document.getElementById("banner");
const feedListeners = new Set();
const feed = new AbortController();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function follow(path, { lastId, onEvent, signal, onState = () => {} }) {
  while (!signal.aborted) {
    try {
      const extra = { Accept: "text/event-stream" };
      if (lastId) extra["Last-Event-ID"] = lastId;
      const response = await fetch(path, { headers: headers(extra), signal });
      if (response.status === 401) { await askToken(Boolean(token())); continue; }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      onState(true);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const chunk = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = {};
          for (const line of chunk.split("\n")) {
            if (!line || line.startsWith(":")) continue;
            const at = line.indexOf(":");
            const key = at < 0 ? line : line.slice(0, at);
            fields[key] = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
          }
          if (fields.data === undefined) continue;
          if (fields.id) lastId = fields.id;
          onEvent(fields.event || "message", JSON.parse(fields.data), fields.id);
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error && error.status === 401) return;  // no token given: nothing to follow
    }
    onState(false);
    await sleep(1000);
  }
}

// The change feed: journal entries and append notices, for as long as the page is open;
// onBack() runs when the daemon answers again after being away.
export function startFeed(onBack) {
  let wasUp = null;
  follow("/v1/events", {
    signal: feed.signal,
    onState: (up) => {
      liveBadge.textContent = up ? "live" : "reconnecting…";
      liveBadge.classList.toggle("on", up);
      banner.hidden = up;
      document.body.dataset.daemon = up ? "up" : "down";
      if (up && wasUp === false) onBack();
      wasUp = up;
    },
    onEvent: (kind, data) => {
      for (const listener of feedListeners) {
        try { listener(kind, data); } catch (error) { console.error(error); }  // the feed goes on
      }
    },
  });
}

// Calls listener(kind, data) for each feed event until the view's signal aborts.
export function subscribe(listener, signal) {
  if (signal.aborted) return;  // a view already left: never told again
  feedListeners.add(listener);
  signal.addEventListener("abort", () => feedListeners.delete(listener));
}
