// The landing view (#/?…): the sessions running now, what today and the last 7 days came to (sessions, turns, tool
// calls and errors, tokens with cache reads apart, the estimated cost, from /v1/stats),
// then the most recently active sessions of every project, filtered and sorted, with the
// projects beside them and the activity of all of them per day.

import { api } from "./api.js";
import { activityChart } from "./chart.js";
import { ago, el, main, q, throttle, titled, when } from "./dom.js";
import { subscribe } from "./live.js";
import { markRows, runningBadge, watchRunning } from "./running.js";
import { sessionTable } from "./sessions.js";

export async function homeView(signal, params) {
  const heading = titled("Recent sessions");
  const projectsBox = el("aside", { class: "projects", "aria-labelledby": "projects-title" });
  const totalsBox = el("section", { class: "totals", "aria-label": "Totals" });
  const runningBox = el("section", { class: "running-now", "aria-labelledby": "running-title" });
  const [table] = await Promise.all([
    sessionTable(signal, params, { address: (p) => `#/?${q(p)}` }),
    drawProjects(projectsBox),
    drawTotals(totalsBox),
  ]);
  if (signal.aborted) return;
  main.replaceChildren(runningBox, totalsBox, el("div", { class: "home" }, el("section", { class: "recent" }, heading, table), projectsBox));
  watchRunning(signal, (state) => { drawRunning(runningBox, state); markRows(main); });
  const redraw = throttle(() => { drawProjects(projectsBox); drawTotals(totalsBox); }, 1000);
  subscribe((kind, data) => { if (kind === "session.appended" || String(data.op || "").startsWith("session.")) redraw(); }, signal);
}

// The sessions being written now, first: each with its project, when its last append
// came and how far it has got.
function drawRunning(box, state) {
  const list = el("ul", { class: "running-list" }, state.items.map((s) => el("li", { "data-id": s.id },
    el("a", { href: `#/session/${s.id}`, title: s.id, text: s.title || "(untitled)" }), runningBadge(),
    el("span", { class: "muted", title: s.repo_root, text: ` ${projectName(s.repo_root)} · ${s.turns} turns · ${s.tool_calls} tool calls · last append ${ago(s.last_append)}` }))));
  box.replaceChildren(el("h2", { id: "running-title", class: "h3", text: `Running now (${state.items.length})` }),
    state.items.length ? list : el("p", { class: "muted", text: "Nothing is being written now." }));
}

const projectName = (root) => root.split("/").filter(Boolean).pop() || root;

async function drawProjects(box) {
  const [projects, activity] = await Promise.all([api("/v1/projects"), api("/v1/projects/activity?days=3660")]);
  const list = el("ul", { class: "project-list" }, projects.items.map((p) => el("li", {},
    el("a", { href: `#/project?${q({ repo_root: p.repo_root })}`, text: p.repo_root }),
    el("div", { class: "muted", title: when(p.last_activity), text: `${p.sessions} sessions · ${p.events} events · ${ago(p.last_activity)}` }))));
  if (!projects.items.length) list.append(el("li", { text: "No sessions yet." }));
  box.replaceChildren(el("h2", { id: "projects-title", class: "h3", text: "Projects" }), list,
    activityChart(activity.days, { label: "Events per day, all projects", width: 300 }));
}

const FIGURES = [["sessions", "Sessions"], ["turns", "Turns"], ["tool_calls", "Tool calls"], ["tool_errors", "Tool errors"],
  ["tokens_in", "Tokens in"], ["cached_in", "of them cached"], ["tokens_out", "Tokens out"]];

async function drawTotals(box) {
  const today = await api("/v1/stats");
  const start = new Date(`${today.until}T00:00:00Z`);
  start.setUTCDate(start.getUTCDate() - 6);
  const week = await api(`/v1/stats?${q({ since: start.toISOString().slice(0, 10), until: today.until })}`);
  box.replaceChildren(...[["Today", "today", today], ["Last 7 days", "week", week]].map(([label, key, found]) => {
    const t = found.total;
    const cost = t.cost_usd === null ? "–" : `$${t.cost_usd.toFixed(2)}`;
    const unpriced = t.unpriced_models.length ? `no price for ${t.unpriced_models.join(", ")}: tokens counted, not priced` : "";
    return el("div", { class: "total", "data-span": key },
      el("h2", { class: "h3", text: label }),
      el("dl", {}, ...FIGURES.map(([name, title]) => el("div", {}, el("dt", { text: title }), el("dd", { "data-stat": name, text: t[name].toLocaleString("en-US") }))),
        el("div", {}, el("dt", { text: "Cost (estimate)" }), el("dd", { "data-stat": "cost_usd", title: `prices: ${found.prices.source}, read ${found.prices.date}`, text: cost }))),
      unpriced ? el("p", { class: "muted unpriced", text: unpriced }) : "");
  }));
}
