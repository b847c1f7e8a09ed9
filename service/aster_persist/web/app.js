// The aster-persist dashboard: plain DOM, the daemon's own API, ES modules with no build
// step. This entry wires the views to the router and starts the change feed.

import { startFeed } from "./live.js";
import { journalView } from "./journal.js";
import { memoryView } from "./memory.js";
import { projectView } from "./project.js";
import { projectsView } from "./projects.js";
import { listen, route } from "./router.js";
import { searchFrom, searchView } from "./search.js";
import { sessionView } from "./session.js";

searchFrom(document.getElementById("search-form"));
listen({
  projects: projectsView,
  project: projectView,
  session: sessionView,
  memory: memoryView,
  journal: journalView,
  search: searchView,
});
startFeed();
route();
