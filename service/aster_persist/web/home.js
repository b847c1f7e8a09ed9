// The landing view (#/?…): the most recently active sessions of every project, filtered
// and sorted, with the projects beside them and the activity of all of them per day.

import { api } from "./api.js";
import { activityChart } from "./chart.js";
import { ago, el, main, q, throttle, titled, when } from "./dom.js";
import { subscribe } from "./live.js";
import { sessionTable } from "./sessions.js";

export async function homeView(signal, params) {
  const heading = titled("Recent sessions");
  const projectsBox = el("aside", { class: "projects", "aria-labelledby": "projects-title" });
  const [table] = await Promise.all([
    sessionTable(signal, params, { address: (p) => `#/?${q(p)}` }),
    drawProjects(projectsBox),
  ]);
  if (signal.aborted) return;
  main.replaceChildren(el("div", { class: "home" }, el("section", { class: "recent" }, heading, table), projectsBox));
  const redraw = throttle(() => drawProjects(projectsBox), 1000);
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
