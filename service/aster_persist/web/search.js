// The search view (#/search?q=…&repo_root=…): sessions and memory, matches marked; a
// session hit opens the transcript at its turn. Also the header's search form.

import { api } from "./api.js";
import { el, main, q, when } from "./dom.js";

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
  const text = params.get("q") || "";
  document.getElementById("search-box").value = text;
  const results = el("ol", { id: "search-results" });
  main.replaceChildren(el("section", {}, el("h2", { text: `Search: ${text}` }), results));
  if (!text) return;
  let page;
  try {
    page = await api(`/v1/search?${q({ q: text, kind: "all", repo_root: params.get("repo_root"), limit: 50 })}`);
  } catch (error) {
    results.replaceWith(el("p", { role: "alert", text: error.message }));
    return;
  }
  for (const hit of page.items) {
    const where = hit.session_id
      ? el("a", { class: "hit", href: `#/session/${hit.session_id}?${q({ seq: hit.seq })}`, text: `${hit.title || hit.session_id} #${hit.seq}` })
      : el("a", { class: "hit", href: `#/memory?${q({ repo_root: "" })}`, text: `${hit.scope} / ${hit.name}` });
    results.append(el("li", {}, where, el("span", { class: "muted", text: ` ${hit.kind} ${hit.role || ""} ${when(hit.ts)}` }),
      el("div", {}, highlighted(hit.snippet, hit.highlights))));
  }
  if (!page.items.length) results.append(el("li", { text: "Nothing found." }));
}

// The header's form: a search from any view goes to #/search.
export function searchFrom(form) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/search?${q({ q: event.target.q.value })}`;
  });
}
