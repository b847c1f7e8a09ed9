// The landing view (#/?…): the sessions running now; what today and the last 7 days came
// to (sessions, turns, tool calls and errors, tokens with cache reads apart, the
// estimated cost, from /v1/stats), split by project, model or day on a click; the last
// 30 days' events stacked by project; then the most recently active sessions of every
// project, filtered and sorted, with the projects beside them.

import { api } from "./api.js";
import { stackedChart } from "./chart.js";
import { ago, el, main, projectName, q, throttle, titled, when, wrap } from "./dom.js";
import { subscribe } from "./live.js";
import { markRows, runningBadge, watchRunning } from "./running.js";
import { sessionTable } from "./sessions.js";

export async function homeView(signal, params) {
  const heading = titled("Recent sessions");
  const projectsBox = el("aside", { class: "projects", "aria-labelledby": "projects-title" });
  const totalsBox = el("section", { class: "totals", "aria-label": "Totals" });
  const runningBox = el("section", { class: "running-now", "aria-labelledby": "running-title" });
  const splitBox = el("section", { class: "split", "aria-live": "polite" });  // a span's totals split
  const chartBox = el("section", { class: "activity", "aria-label": "Activity" });
  const [table] = await Promise.all([
    sessionTable(signal, params, { address: (p) => `#/?${q(p)}` }),
    drawProjects(projectsBox, chartBox),
    drawTotals(totalsBox, splitBox),
  ]);
  if (signal.aborted) return;
  main.replaceChildren(runningBox, totalsBox, splitBox, el("div", { class: "home" }, el("section", { class: "recent" }, chartBox, heading, table), projectsBox));
  watchRunning(signal, (state) => { drawRunning(runningBox, state); markRows(main); });
  const redraw = throttle(() => { drawProjects(projectsBox, chartBox); drawTotals(totalsBox, splitBox); }, 1000);
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

const SHOWN_PROJECTS = 5;  // projects charted apart; the rest together

async function drawProjects(box, chartBox) {
  const [projects, all] = await Promise.all([api("/v1/projects"), api("/v1/projects/activity?days=30")]);
  const list = el("ul", { class: "project-list" }, projects.items.map((p) => el("li", {},
    el("a", { href: `#/project?${q({ repo_root: p.repo_root })}`, text: p.repo_root }),
    el("div", { class: "muted", title: when(p.last_activity), text: `${p.sessions} sessions · ${p.events} events · ${ago(p.last_activity)}` }))));
  if (!projects.items.length) list.append(el("li", { text: "No sessions yet." }));
  box.replaceChildren(el("h2", { id: "projects-title", class: "h3", text: "Projects" }), list);
  // the last 30 days, stacked by the most recently active projects, the rest as one
  const shown = projects.items.slice(0, SHOWN_PROJECTS);
  const each = await Promise.all(shown.map((p) => api(`/v1/projects/activity?${q({ repo_root: p.repo_root, days: 30 })}`)));
  const series = shown.map((p, i) => ({ name: p.repo_root, title: projectName(p.repo_root), days: each[i].days }));
  const counted = new Map();
  for (const s of series) for (const d of s.days) counted.set(d.day, (counted.get(d.day) || 0) + d.events);
  const rest = all.days.map((d) => ({ day: d.day, events: d.events - (counted.get(d.day) || 0) })).filter((d) => d.events > 0);
  if (rest.length) series.push({ name: "", title: "other projects", days: rest });
  const end = new Date(new Date(all.since).getTime() + 29 * 86400000).toISOString().slice(0, 10);
  chartBox.replaceChildren(stackedChart(series, { span: 30, end, label: "Events per day, by project" }));
}

const FIGURES = [["sessions", "Sessions"], ["turns", "Turns"], ["tool_calls", "Tool calls"], ["tool_errors", "Tool errors"],
  ["tokens_in", "Tokens in"], ["cached_in", "of them cached"], ["tokens_out", "Tokens out"]];

async function drawTotals(box, split) {
  const today = await api("/v1/stats");
  const start = new Date(`${today.until}T00:00:00Z`);
  start.setUTCDate(start.getUTCDate() - 6);
  const spans = { today: { since: today.until, until: today.until }, week: { since: start.toISOString().slice(0, 10), until: today.until } };
  const week = await api(`/v1/stats?${q(spans.week)}`);
  const cards = [["Today", "today", today], ["Last 7 days", "week", week]].map(([label, key, found]) => {
    const t = found.total;
    const unpriced = t.unpriced_models.length ? `no price for ${t.unpriced_models.join(", ")}: tokens counted, not priced` : "";
    const by = (group) => el("button", { type: "button", class: "plain", "data-group": group, text: `By ${group}`,
      onclick: () => drawSplit(split, `${label}, by ${group}`, { ...spans[key], group }) });
    return el("div", { class: "total", "data-span": key },
      el("h2", { class: "h3", text: label }),
      el("dl", {}, ...FIGURES.map(([name, title]) => el("div", {}, el("dt", { text: title }), el("dd", { "data-stat": name, text: t[name].toLocaleString("en-US") }))),
        el("div", {}, el("dt", { text: "Cost (estimate)" }), el("dd", { "data-stat": "cost_usd", title: `prices: ${found.prices.source}, read ${found.prices.date}`, text: money(t.cost_usd) }))),
      unpriced ? el("p", { class: "muted unpriced", text: unpriced }) : "",
      el("div", { class: "toolbar" }, by("project"), by("model"), by("day")));
  });
  box.replaceChildren(...cards);
}

const money = (usd) => usd === null ? "–" : `$${usd.toFixed(2)}`;

// A span's totals split by project, model or day (GET /v1/stats?group=), as a table.
async function drawSplit(box, label, params) {
  const found = await api(`/v1/stats?${q(params)}`);
  const head = el("tr", {}, el("th", { scope: "col", text: params.group }), ...FIGURES.map(([, title]) => el("th", { scope: "col", class: "num", text: title })),
    el("th", { scope: "col", class: "num", text: "Cost (estimate)" }));
  const rows = found.groups.map((g) => el("tr", { "data-key": g.key ?? "" },
    el("th", { scope: "row", class: "key", title: g.key ?? "", text: params.group === "project" ? projectName(g.key) : (g.key ?? "(none)") }),
    ...FIGURES.map(([name]) => el("td", { class: "num", "data-stat": name, text: g[name].toLocaleString("en-US") })),
    el("td", { class: "num", "data-stat": "cost_usd", title: g.unpriced_models.length ? `no price for ${g.unpriced_models.join(", ")}` : "", text: money(g.cost_usd) })));
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: FIGURES.length + 2, text: "Nothing in this span." })));
  box.replaceChildren(el("h3", { class: "h3", text: label }),
    wrap(el("table", { class: "split-table", "data-group": params.group }, el("thead", {}, head), el("tbody", {}, rows))),
    el("button", { type: "button", class: "plain", text: "Close", onclick: () => box.replaceChildren() }));
}
