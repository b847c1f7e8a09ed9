// The journal view (#/journal?op=…&scope=…&actor=…&since=…&until=…): every change, newest
// first, 50 at a time; each entry linked to its session or block, with its diff (memory
// changes), whether it was reverted, and a Revert that asks first. New entries that
// match arrive from the feed.

import { api } from "./api.js";
import { ago, amended, el, main, navigate, q, say, titled, when } from "./dom.js";
import { subscribe } from "./live.js";
import { diffButton, rootOf } from "./revisions.js";

let known = null; // the journal's operations and actors, asked once

function vocabulary() {
  known ??= api("/v1/journal/operations").catch((error) => { known = null; throw error; });
  return known;
}

const FILTERS = ["op", "scope", "actor", "since", "until"];

function summary(entry) {
  const detail = entry.detail || {};
  if (detail.first_seq !== undefined) return `seq ${detail.first_seq}–${detail.last_seq}`;
  if (detail.title) return `“${detail.title}”`;
  if (detail.reason) return detail.reason;
  if (detail.keys) return `changed ${detail.keys.join(", ")}`;
  if (detail.reverted) return `undid ${detail.reverted}`;
  return "";
}

const titles = new Map(); // session id -> its title (asked once a page)

function titleOf(id) {
  if (!titles.has(id)) {
    titles.set(id, api(`/v1/sessions/${id}`).then((s) => s.title || `session ${id.slice(-6)}`)
      .catch(() => `session ${id.slice(-6)} (gone)`));
  }
  return titles.get(id);
}

function target(entry) {
  if (entry.session) {  // named by its title (its id on hover) once the title is known
    const link = el("a", { href: `#/session/${entry.session}`, class: "target-link", title: entry.session, text: "a session" });
    titleOf(entry.session).then((title) => { link.textContent = title; });
    return link;
  }
  if (!entry.name) return el("span", { text: entry.scope });
  const link = el("a", { class: "target-link", href: "#/memory", text: `${entry.scope} / ${entry.name}` });
  rootOf(entry.scope).then((root) => {
    if (root !== null) link.href = `#/memory?${q({ repo_root: root, block: entry.name === "ASTER.md" ? undefined : entry.name })}`;
  }).catch(() => {});
  return link;
}

export function journalItem(entry, { links = true } = {}) {
  const item = el("li", { "data-op": entry.op, "data-id": entry.id },
    el("div", { class: "entry-head" },
      el("strong", { text: entry.op }), " ",
      links ? target(entry) : null,
      el("span", { class: "muted", text: ` · ${entry.actor} · ` }),
      el("time", { datetime: entry.ts, title: when(entry.ts), text: ago(entry.ts) }),
      summary(entry) ? el("span", { class: "muted", text: ` · ${summary(entry)}` }) : null,
      entry.reverted_by ? el("span", { class: "badge reverted", title: `Reverted by ${entry.reverted_by}`, text: "reverted" }) : null));
  const tools = el("span", { class: "entry-tools" });
  if (entry.op.startsWith("memory.") && entry.op !== "memory.recall" && entry.op !== "memory.rejected" && entry.name) tools.append(diffButton(entry, item));
  if (entry.revertible) {
    tools.append(el("button", { type: "button", class: "plain", text: "Revert", onclick: async () => {
      if (!confirm(`Revert this ${entry.op}${entry.name ? ` of ${entry.name}` : ""}? The revert is journaled too, so it can be undone.`)) return;
      try { await api(`/v1/journal/${entry.id}/revert`, { method: "POST" }); say(`Reverted ${entry.op}.`, true); } catch (error) { say(error.message); }
    } }));
  }
  item.firstChild.append(" ", tools);
  return item;
}

export async function journalView(signal, params) {
  const { operations, actors } = await vocabulary();
  const names = operations.map((o) => o.op);
  const groups = [...new Set(names.map((n) => n.split(".")[0]))]; // op=session: every session.*
  const ops = groups.flatMap((g) => [g, ...names.filter((n) => n.startsWith(`${g}.`))]);
  const wanted = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || undefined]));
  const heading = titled("Journal");
  const go = (changes) => { navigate(`#/journal?${amended(changes)}`); };
  const choose = (name, label, options) => el("label", {}, label, " ", el("select", { name, id: `journal-${name}`, onchange: (e) => go({ [name]: e.target.value || undefined }) },
    el("option", { value: "", text: "any" }), options.map((o) => el("option", { value: o, selected: o === wanted[name], text: o }))));
  const scope = el("input", { id: "journal-scope", name: "scope", value: wanted.scope || "", placeholder: "global, project:…" });
  const date = (name, label) => el("label", {}, label, " ", el("input", { type: "date", name, value: wanted[name] || "", onchange: (e) => go({ [name]: e.target.value || undefined }) }));
  const filter = el("form", { class: "toolbar filters", "aria-label": "Filter the journal" },
    choose("op", "Change", ops), choose("actor", "By", actors),
    el("label", { for: "journal-scope", text: "Scope" }), scope, date("since", "From"), date("until", "to"),
    el("button", { type: "submit", text: "Filter" }), el("button", { type: "button", class: "plain", text: "Clear", onclick: () => { navigate("#/journal"); } }));
  filter.addEventListener("submit", (event) => { event.preventDefault(); go({ scope: scope.value || undefined }); });
  const list = el("ol", { class: "journal", id: "journal-list", "aria-live": "polite" });
  const older = el("button", { class: "plain", id: "journal-older", text: "Older entries", hidden: true });
  main.replaceChildren(el("section", {}, heading, filter, list, older));
  let cursor = null;
  const load = async () => {
    const page = await api(`/v1/journal?${q({ ...wanted, order: "desc", limit: 50, cursor })}`);
    list.append(...page.items.map((e) => journalItem(e)));
    if (!list.children.length) list.append(el("li", { class: "muted", text: "No changes match." }));
    cursor = page.next_cursor;
    older.hidden = !cursor;
  };
  older.addEventListener("click", () => load().catch((error) => say(error.message)));
  await load();
  const matches = (entry) => (!wanted.scope || entry.scope === wanted.scope) && (!wanted.actor || entry.actor === wanted.actor) &&
    (!wanted.op || entry.op === wanted.op || entry.op.startsWith(`${wanted.op}.`)) && !wanted.until;
  subscribe((kind, entry) => {
    if (kind !== "journal") return;
    const undone = entry.detail?.reverted && list.querySelector(`li[data-id="${entry.detail.reverted}"] .entry-head`);
    if (undone && !undone.querySelector(".reverted")) undone.append(el("span", { class: "badge reverted", title: `Reverted by ${entry.id}`, text: "reverted" }));
    if (matches(entry)) list.prepend(journalItem(entry));
  }, signal);
}
