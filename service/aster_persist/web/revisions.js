// What a journaled change did to a memory file, as a diff: the text before it (kept in
// the entry) against the text after it (the next change's "before", or the file as it
// is now); and the merge of two versions with conflict markers where they differ.

import { api } from "./api.js";
import { el, q } from "./dom.js";
import { changed, diffView, lineDiff } from "./diff.js";

let roots = null;

// The repo_root of a scope ("project:<slug>"), or "" for global memory.
// The repo_root of a scope ("project:<slug>"): "" for global memory, null when no
// project with sessions has it. Asked again when a scope is not known yet.
export async function rootOf(scope) {
  if (scope === "global") return "";
  for (const fresh of [false, true]) {
    if (fresh || !roots) roots = api("/v1/projects").then((p) => new Map(p.items.map((x) => [`project:${x.slug}`, x.repo_root])));
    try {
      const found = (await roots).get(scope);
      if (found !== undefined) return found;
    } catch { roots = null; return null; }
  }
  return null;
}

async function current(entry) {
  const root = await rootOf(entry.scope);
  if (root === null) throw new Error(`no project is known for ${entry.scope}`);
  const scope = root ? { repo_root: root } : {};
  if (entry.name === "ASTER.md") return (await api(`/v1/memory/core?${q(scope)}`)).content;
  const archived = String(entry.after?.path || "").includes(".archive/");
  return (await api(`/v1/memory/blocks/${encodeURIComponent(entry.name)}?${q({ ...scope, track: false, archived })}`)).content;
}

export async function revisionRows(entry) {
  const before = entry.before ? entry.before.content : "";
  if (typeof before !== "string") return null;  // withheld from the journal (a secret)
  let after = "";
  if (entry.after) {
    const later = await api(`/v1/journal?${q({ name: entry.name, scope: entry.scope, cursor: entry.id, limit: 1000 })}`);
    const next = later.items.find((e) => e.op !== "memory.recall" && e.before && typeof e.before.content === "string");
    try { after = next ? next.before.content : await current(entry); } catch { return null; }
  }
  return lineDiff(before, after);
}

// A button that shows (and hides) the entry's diff in `box`.
export function diffButton(entry, box) {
  let shown = null;
  return el("button", { type: "button", class: "plain", text: "Diff", onclick: async (event) => {
    if (shown) { shown.remove(); shown = null; return; }
    const rows = await revisionRows(entry);
    shown = rows ? el("div", { class: "revision" }, el("p", { class: "muted", text: `${changed(rows)} lines changed` }), diffView(rows, `What ${entry.op} changed`))
      : el("p", { class: "muted revision", text: "This change cannot be shown: its text was withheld from the journal, or the file it changed cannot be read now." });
    box.append(shown);
    event.target.setAttribute("aria-expanded", "true");
  } });
}

export function merged(mine, theirs) {
  const out = [];
  let yours = [];
  let others = [];
  const flush = () => {
    if (!yours.length && !others.length) return;
    out.push("<<<<<<< yours", ...yours, "=======", ...others, ">>>>>>> theirs");
    yours = [];
    others = [];
  };
  for (const [op, text] of lineDiff(theirs, mine)) {
    if (op === "+") yours.push(text);
    else if (op === "-") others.push(text);
    else { flush(); out.push(text); }
  }
  flush();
  return out.join("\n");
}

// The box shown when a save met a newer version: a diff of theirs against yours, and
// the three ways on: keep yours (save over theirs), take theirs, or merge by hand.
export function conflictBox(what, mine, theirs, { keepMine, takeTheirs, merge }) {
  const box = el("div", { class: "conflict", role: "alert" },
    el("strong", { text: "Conflict: " }), `${what} changed since you opened it. Your text is kept below; this is how theirs differs from yours.`,
    diffView(lineDiff(theirs, mine), "Theirs (−) against yours (+)"));
  const button = (text, action) => el("button", { type: "button", class: "plain", text, onclick: () => { box.remove(); action(); } });
  box.append(el("div", { class: "toolbar" }, button("Keep mine", keepMine), button("Take theirs", takeTheirs),
    button("Merge", () => merge(merged(mine, theirs)))));
  return box;
}
