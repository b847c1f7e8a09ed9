// The projects view (#/): every project with its sessions, events and last activity,
// drawn again when the feed reports a session change.

import { api } from "./api.js";
import { el, main, q, throttle, when } from "./dom.js";
import { subscribe } from "./live.js";

export async function projectsView(signal) {
  const box = el("section", {}, el("h2", { text: "Projects" }));
  main.replaceChildren(box);
  const table = el("table", {}, el("thead", {}, el("tr", {},
    el("th", { text: "Project" }), el("th", { text: "Sessions" }), el("th", { text: "Events" }),
    el("th", { text: "Last activity" }))), el("tbody"));
  box.append(table);
  const draw = async () => {
    const projects = await api("/v1/projects");
    table.tBodies[0].replaceChildren(...projects.items.map((p) => el("tr", {},
      el("td", {}, el("a", { href: `#/project?${q({ repo_root: p.repo_root })}`, text: p.repo_root })),
      el("td", { text: p.sessions }), el("td", { text: p.events }),
      el("td", { text: when(p.last_activity) }))));
    if (!projects.items.length) table.tBodies[0].append(el("tr", {}, el("td", { colspan: 4, text: "No sessions yet." })));
  };
  await draw();
  const redraw = throttle(draw, 500);
  subscribe((kind, data) => { if (kind === "session.appended" || String(data.op || "").startsWith("session.")) redraw(); }, signal);
}
