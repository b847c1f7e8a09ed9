// The journal view (#/journal?op=…&scope=…): the latest 200 matching entries, newest
// first, new ones prepended from the feed; each entry the server marks revertible has
// its Revert button.

import { api } from "./api.js";
import { el, main, q, say, when } from "./dom.js";
import { subscribe } from "./live.js";

function describeEntry(entry) {
  const detail = entry.detail || {};
  let extra = "";
  if (detail.first_seq !== undefined) extra = ` seq ${detail.first_seq}-${detail.last_seq}`;
  else if (detail.title) extra = ` "${detail.title}"`;
  else if (detail.reason) extra = ` (${detail.reason})`;
  return `${when(entry.ts)} · ${entry.op} · ${entry.scope} · ${entry.name || entry.session || ""}${extra} · ${entry.actor}`;
}

export function journalList(entries) {
  const list = el("ol", { class: "journal" });
  for (const entry of entries) list.append(journalItem(entry));
  return list;
}

function journalItem(entry) {
  const item = el("li", { "data-op": entry.op, "data-id": entry.id }, el("span", { text: describeEntry(entry) }));
  if (entry.revertible) {
    const revert = el("button", { class: "plain", text: "Revert" });
    revert.addEventListener("click", async () => {
      try { await api(`/v1/journal/${entry.id}/revert`, { method: "POST" }); say(`Reverted ${entry.op}.`, true); } catch (error) { say(error.message); }
    });
    item.append(" ", revert);
  }
  return item;
}

export async function journalView(signal, params) {
  const op = el("input", { id: "journal-op", name: "op", value: params.get("op") || "", placeholder: "memory, session.created…" });
  const scope = el("input", { id: "journal-scope", name: "scope", value: params.get("scope") || "", placeholder: "global, project:…" });
  const filter = el("form", { class: "toolbar" },
    el("label", { for: "journal-op", text: "Op" }), op, el("label", { for: "journal-scope", text: "Scope" }), scope,
    el("button", { type: "submit", text: "Filter" }));
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/journal?${q({ op: op.value, scope: scope.value })}`;
  });
  const list = el("ol", { class: "journal", id: "journal-list", "aria-live": "polite" });
  main.replaceChildren(el("section", {}, el("h2", { text: "Journal" }), filter, list));
  const wanted = { op: params.get("op") || undefined, scope: params.get("scope") || undefined };
  let entries = [];
  let cursor = null;
  for (let pages = 0; pages < 20; pages++) {
    const page = await api(`/v1/journal?${q({ ...wanted, limit: 1000, cursor })}`);
    entries = entries.concat(page.items).slice(-200);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  list.replaceChildren(...entries.reverse().map(journalItem));
  const matches = (entry) => (!wanted.scope || entry.scope === wanted.scope) &&
    (!wanted.op || entry.op === wanted.op || entry.op.startsWith(`${wanted.op}.`));
  subscribe((kind, entry) => { if (kind === "journal" && matches(entry)) list.prepend(journalItem(entry)); }, signal);
}
