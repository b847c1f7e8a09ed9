// The aster-persist dashboard: plain DOM, the daemon's own API, ES modules with no build
// step. This entry wires the views to the router, starts the change feed, and holds the
// colour scheme switch and the keyboard shortcuts (/ search; in a session j and k between
// turns, e and E between failed results, g and G to its first and last turn).

import { homeView } from "./home.js";
import { journalView } from "./journal.js";
import { startFeed } from "./live.js";
import { memoryView } from "./memory.js";
import { projectView } from "./project.js";
import { listen, reload, route } from "./router.js";
import { searchFrom, searchView } from "./search.js";
import { sessionView, stepEnd, stepError, stepTurn } from "./session.js";

const THEMES = ["system", "light", "dark"];
const switcher = document.getElementById("theme-switch");

function applyTheme(theme) {
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  switcher.textContent = `Theme: ${theme}`;
  localStorage.setItem("aster-theme", theme);
}

applyTheme(localStorage.getItem("aster-theme") || "system");
switcher.addEventListener("click", () => {
  const now = localStorage.getItem("aster-theme") || "system";
  applyTheme(THEMES[(THEMES.indexOf(now) + 1) % THEMES.length]);
});

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const typing = event.target.closest("input, textarea, select, [contenteditable]");
  if (typing || document.querySelector("dialog[open]")) return;
  if (event.key === "/") {
    event.preventDefault();
    document.getElementById("search-box").focus();
  } else if (event.key === "j" || event.key === "k") {
    if (stepTurn(event.key === "j" ? 1 : -1)) event.preventDefault();
  } else if (event.key === "e" || event.key === "E") {
    if (stepError(event.key === "e" ? 1 : -1)) event.preventDefault();
  } else if (event.key === "g" || event.key === "G") {
    if (stepEnd(event.key === "g" ? -1 : 1)) event.preventDefault();
  }
});

document.addEventListener("click", (event) => {  // a link to another view: not ready now
  const link = event.target.closest('a[href^="#/"]');
  const here = event.button === 0 && !event.ctrlKey && !event.metaKey && !event.shiftKey && !event.altKey;
  if (link && here && link.getAttribute("href") !== location.hash && !event.defaultPrevented) document.body.dataset.ready = "false";
});
searchFrom(document.getElementById("search-form"));
listen({
  home: homeView,
  project: projectView,
  session: sessionView,
  memory: memoryView,
  journal: journalView,
  search: searchView,
});
startFeed(reload);
route();
