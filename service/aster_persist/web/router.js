// The hash router: one view at a time, drawn from the address after "#"; the previous
// view's signal is aborted first, and body[data-view][data-ready] says when it is drawn.

import { say } from "./dom.js";

let views = null;
let current = null;

export async function route() {
  if (current) current.abort();
  current = new AbortController();
  say("");
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(query || "");
  try {
    if (path.startsWith("/session/")) await views.session(current.signal, params, decodeURIComponent(path.slice(9)));
    else if (path === "/project") await views.project(current.signal, params);
    else if (path === "/memory") await views.memory(current.signal, params);
    else if (path === "/journal") await views.journal(current.signal, params);
    else if (path === "/search") await views.search(current.signal, params);
    else await views.projects(current.signal);
  } catch (error) {
    say(error.message);
  }
  document.body.dataset.view = path;
  document.body.dataset.ready = "true";
}

// Takes the views by name and draws again whenever the address changes.
export function listen(table) {
  views = table;
  window.addEventListener("hashchange", () => { document.body.dataset.ready = "false"; route(); });
}
