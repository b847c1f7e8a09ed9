// The project view (#/project?repo_root=…): its sessions 50 at a time, a search within
// the project and a link to its memory; drawn again when the feed reports a session change.

import { api } from "./api.js";
import { el, main, q, throttle, when } from "./dom.js";
import { subscribe } from "./live.js";

export async function projectView(signal, params) {
  const repoRoot = params.get("repo_root");
  const heading = el("h2", { text: repoRoot });
  const search = el("form", { class: "toolbar", role: "search" },
    el("label", { for: "project-search", text: "Search this project" }),
    el("input", { id: "project-search", type: "search", name: "q" }),
    el("button", { type: "submit", text: "Search" }),
    el("a", { href: `#/memory?${q({ repo_root: repoRoot })}`, text: "Its memory" }));
  search.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/search?${q({ q: search.q.value, repo_root: repoRoot })}`;
  });
  const body = el("tbody");
  const table = el("table", {}, el("thead", {}, el("tr", {},
    el("th", { text: "Session" }), el("th", { text: "Created" }), el("th", { text: "Updated" }),
    el("th", { text: "Events" }), el("th", { text: "State" }))), body);
  const more = el("button", { class: "plain", text: "More sessions", hidden: true });
  main.replaceChildren(el("section", {}, heading, search, table, more));
  let cursor = null;
  const row = (s) => el("tr", { "data-id": s.id },
    el("td", {}, el("a", { href: `#/session/${s.id}`, text: s.title || "(untitled)" }), el("div", { class: "muted", text: s.id })),
    el("td", { text: when(s.created_at) }), el("td", { text: when(s.updated_at) }),
    el("td", { text: s.events }), el("td", { class: `state-${s.state}`, text: s.state }));
  const load = async (reset) => {
    const page = await api(`/v1/sessions?${q({ repo_root: repoRoot, limit: 50, cursor: reset ? null : cursor })}`);
    if (reset) body.replaceChildren();
    body.append(...page.items.map(row));
    cursor = page.next_cursor;
    more.hidden = !cursor;
  };
  more.addEventListener("click", () => load(false));
  await load(true);
  const redraw = throttle(() => load(true), 500);
  subscribe((kind, data) => {
    if (kind === "session.appended" || String(data.op || "").startsWith("session.")) redraw();
  }, signal);
}
