// The search view (#/search?q=…&kind=…&role=…&repo_root=…&since=…&until=…): sessions and
// memory, matches marked, a session's hits grouped under its title and project; a
// session hit opens the transcript at its turn, a memory hit the block in its own scope.
// Also the header's search form.

import { api } from "./api.js";
import { amended, el, main, navigate, projectName, q, titled, when } from "./dom.js";

const FILTERS = ["q", "kind", "role", "repo_root", "since", "until"];
const SHOWN = 3;  // hits shown under a session; the rest folded

function highlighted(text, spans) {
  const out = el("span", { class: "snippet" });
  let at = 0;
  for (const [start, end] of spans || []) {
    out.append(text.slice(at, start), el("mark", { text: text.slice(start, end) }));
    at = end;
  }
  out.append(text.slice(at));
  return out;
}


export async function searchView(signal, params) {
  const wanted = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || undefined]));
  const text = wanted.q || "";
  document.getElementById("search-box").value = text;
  const heading = titled(text ? `Search: ${text}` : "Search");
  const projects = await api("/v1/projects");
  if (signal.aborted) return;
  const go = (changes) => { navigate(`#/search?${amended(changes)}`); };
  const choose = (name, label, options) => el("label", {}, label, " ", el("select", { name, id: `search-${name}`, onchange: (e) => go({ [name]: e.target.value || undefined }) },
    el("option", { value: "", text: name === "kind" ? "sessions and memory" : "any" }),
    options.map(([value, shown]) => el("option", { value, selected: value === wanted[name], text: shown }))));
  const date = (name, label) => el("label", {}, label, " ", el("input", { type: "date", name, value: wanted[name] || "", onchange: (e) => go({ [name]: e.target.value || undefined }) }));
  const filters = el("form", { class: "toolbar filters", "aria-label": "Filter the results", onsubmit: (e) => e.preventDefault() },
    choose("kind", "In", [["messages", "sessions only"], ["memory", "memory only"]]),
    choose("role", "Said by", [["user", "user"], ["assistant", "assistant"], ["tool", "tool"], ["system", "system"]]),
    choose("repo_root", "Project", projects.items.map((p) => [p.repo_root, p.repo_root])),
    date("since", "From"), date("until", "to"));
  const results = el("ol", { id: "search-results" });
  main.replaceChildren(el("section", {}, heading, filters, results));
  if (!text) return;
  const page = await api(`/v1/search?${q({ ...wanted, kind: wanted.kind || "all", limit: 50 })}`);
  if (signal.aborted) return;
  // Hits in a session are grouped under it (at the rank of its best), so "which session
  // was that" is read at a glance; memory hits stand alone.
  const groups = new Map();
  for (const hit of page.items) {
    if (!hit.session_id) {
      results.append(el("li", { "data-kind": hit.kind },
        el("a", { class: "hit", href: `#/memory?${q({ repo_root: hit.repo_root || "", block: hit.kind === "block" ? hit.name : undefined })}`, text: `${hit.kind === "core" ? "ASTER.md" : hit.name} (memory)` }),
        " ", projectOf(hit), el("span", { class: "muted", text: ` · ${hit.kind} · ${when(hit.ts)}` }),
        el("div", {}, highlighted(hit.snippet, hit.highlights))));
      continue;
    }
    let group = groups.get(hit.session_id);
    if (!group) {
      group = { hits: el("ol", { class: "session-hits" }), count: el("span", { class: "muted" }), n: 0 };
      groups.set(hit.session_id, group);
      results.append(el("li", { class: "session-group", "data-session": hit.session_id },
        el("a", { class: "session-link", href: `#/session/${hit.session_id}`, title: hit.session_id, text: hit.title || "(untitled)" }),
        " ", projectOf(hit), " ", group.count, group.hits));
    }
    group.n += 1;
    group.count.textContent = `· ${group.n} hit${group.n > 1 ? "s" : ""}`;
    if (group.n === SHOWN + 1) {  // the rest of a session's hits folded
      group.rest = el("ol", { class: "session-hits", start: SHOWN + 1 });
      group.fold = el("details", { class: "more-hits" }, el("summary"), group.rest);
      group.hits.after(group.fold);
    }
    if (group.fold) group.fold.firstChild.textContent = `${group.n - SHOWN} more in this session`;
    (group.rest || group.hits).append(el("li", { "data-kind": hit.kind },
      el("a", { class: "hit", href: `#/session/${hit.session_id}?${q({ seq: hit.seq })}`, text: `#${hit.seq}` }),
      el("span", { class: "muted", text: ` · ${hit.role || hit.kind} · ${when(hit.ts)}` }),
      el("div", {}, highlighted(hit.snippet, hit.highlights))));
  }
  if (!page.items.length) results.append(el("li", { text: "Nothing found." }));
}

const projectOf = (hit) => el("span", { class: "project", title: hit.repo_root || "global memory", text: projectName(hit.repo_root) });

// The header's form: a search from any view goes to #/search.
export function searchFrom(form) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    navigate(`#/search?${q({ q: event.target.q.value })}`);
  });
}
