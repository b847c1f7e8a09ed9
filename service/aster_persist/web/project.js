// The project view (#/project?repo_root=…): its activity per day, a search within it, a
// link to its memory, and its sessions (filtered, sorted, paged; redrawn from the feed).

import { api } from "./api.js";
import { activityChart } from "./chart.js";
import { el, main, navigate, q, titled } from "./dom.js";
import { markRows, watchRunning } from "./running.js";
import { sessionTable } from "./sessions.js";

export async function projectView(signal, params) {
  const repoRoot = params.get("repo_root");
  const heading = titled(repoRoot);
  const search = el("form", { class: "toolbar", role: "search" },
    el("label", { for: "project-search", text: "Search this project" }),
    el("input", { id: "project-search", type: "search", name: "q" }),
    el("button", { type: "submit", text: "Search" }),
    el("a", { href: `#/memory?${q({ repo_root: repoRoot })}`, text: "Its memory" }));
  search.addEventListener("submit", (event) => {
    event.preventDefault();
    navigate(`#/search?${q({ q: search.q.value, repo_root: repoRoot })}`);
  });
  const [activity, table] = await Promise.all([
    api(`/v1/projects/activity?${q({ repo_root: repoRoot, days: 3660 })}`),
    sessionTable(signal, params, { fixed: { repo_root: repoRoot }, address: (p) => `#/project?${q({ ...p, repo_root: repoRoot })}` }),
  ]);
  if (signal.aborted) return;
  main.replaceChildren(el("section", {}, heading, search, activityChart(activity.days, { label: "Events per day" }), table));
  watchRunning(signal, () => markRows(main));
}
