// The landing view (#/?…): what today and the last 7 days came to (sessions, turns, tool
// calls and errors, tokens with cache reads apart, the estimated cost, from /v1/stats),
// then the most recently active sessions of every project, filtered and sorted, with the
// projects beside them and the activity of all of them per day.

import { api } from "./api.js";
import { activityChart } from "./chart.js";
import { ago, el, main, q, throttle, titled, when } from "./dom.js";
import { subscribe } from "./live.js";
import { sessionTable } from "./sessions.js";

export async function homeView(signal, params) {
  const heading = titled("Recent sessions");
  const projectsBox = el("aside", { class: "projects", "aria-labelledby": "projects-title" });
  const totalsBox = el("section", { class: "totals", "aria-label": "Totals" });
  const [table] = await Promise.all([
    sessionTable(signal, params, { address: (p) => `#/?${q(p)}` }),
    drawProjects(projectsBox),
    drawTotals(totalsBox),
  ]);
  if (signal.aborted) return;
  main.replaceChildren(totalsBox, el("div", { class: "home" }, el("section", { class: "recent" }, heading, table), projectsBox));
  const redraw = throttle(() => { drawProjects(projectsBox); drawTotals(totalsBox); }, 1000);
  subscribe((kind, data) => { if (kind === "session.appended" || String(data.op || "").startsWith("session.")) redraw(); }, signal);
}

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
