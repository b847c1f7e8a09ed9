// The hash router: one view at a time, drawn from the address after "#"; the previous
// view's signal is aborted first, and body[data-view][data-ready] says when it is drawn.
// The focus moves to the new view's heading; a view that failed says why in plain words
// and is drawn again when the daemon is back (reload).

import { el, inProject, main, say } from "./dom.js";

let views = null;
let current = null;
let failed = false;

function pick(path) {
  if (path.startsWith("/session/")) return ["session", decodeURIComponent(path.slice(9))];
  const name = { "/project": "project", "/memory": "memory", "/journal": "journal", "/search": "search" }[path];
  return [name || "home", null];
}

export async function route({ keepFocus = false } = {}) {
  if (current) current.abort();
  const mine = current = new AbortController();
  document.body.dataset.ready = "false";
  say("");
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(query || "");
  const [name, id] = pick(path);
  failed = false;
  inProject(params.get("repo_root"));
  try {
    await views[name](mine.signal, params, id);
  } catch (error) {
    if (mine.signal.aborted) return;
    failed = true;
    document.title = "Could not load · aster-persist";
    main.replaceChildren(el("section", { class: "failed" },
      el("h2", { id: "view-title", tabindex: "-1", text: "This view could not be loaded" }),
      el("p", { text: error.message })));
  }
  if (mine.signal.aborted) return;
  document.body.dataset.view = path;
  document.body.dataset.ready = "true";
  if (!keepFocus && !main.contains(document.activeElement)) {
    const heading = document.getElementById("view-title");
    (heading || main).focus({ preventScroll: Boolean(params.get("seq")) });
  }
}

// Draw the current view again: after the daemon came back, when the view had failed
// or its data may be stale.
// A session's transcript follows its own stream, so it is drawn again only if it failed.
export function reload() {
  if (failed || !location.hash.startsWith("#/session/")) route({ keepFocus: !failed });
}

// Takes the views by name and draws again whenever the address changes.
export function listen(table) {
  views = table;
  window.addEventListener("hashchange", () => route());
}
