// The sessions being written now (GET /v1/sessions/running), shared by the views: asked
// again as appends come, and while some run, often enough that a mark goes when its
// window ends. A view watches it until its signal aborts.

import { api } from "./api.js";
import { el, throttle } from "./dom.js";
import { subscribe } from "./live.js";

let state = { window_seconds: 300, items: [] };
const watchers = new Set();
let timer = null;

async function ask() {
  clearTimeout(timer);
  if (!watchers.size) return;
  try { state = await api("/v1/sessions/running"); } catch { return; }  // the banner says why
  for (const draw of watchers) draw(state);
  if (state.items.length) timer = setTimeout(ask, Math.min(15, state.window_seconds / 2) * 1000);
}

const soon = throttle(ask, 300);

// `draw(state)` now and whenever it may have changed, until `signal` aborts.
export function watchRunning(signal, draw) {
  watchers.add(draw);
  signal.addEventListener("abort", () => watchers.delete(draw));
  subscribe((kind) => { if (kind === "session.appended") soon(); }, signal);
  ask();
}

export const isRunning = (id) => state.items.some((s) => s.id === id);

// The rows of session tables under `root` marked (or not) as running.
export function markRows(root) {
  for (const row of root.querySelectorAll("table.sessions tr[data-id]")) {
    const badge = row.querySelector(".badge.running");
    if (isRunning(row.dataset.id) && !badge) row.querySelector("td.title a")?.after(runningBadge());
    else if (!isRunning(row.dataset.id) && badge) badge.remove();
  }
}

export const runningBadge = () => el("span", { class: "badge running", title: "Being written now", text: "running" });
