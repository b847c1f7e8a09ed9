// Line diffs, drawn: the lines two texts share and those only one has, in order, found
// by the longest common subsequence of their lines (after the common start and end are
// set aside, so a small change in a long text is cheap).

import { el } from "./dom.js";

const MAX_CELLS = 4_000_000;  // beyond this, the middles are shown as all gone, all new

export function lineDiff(before, after) {
  const a = String(before ?? "").replace(/\n$/, "").split("\n");
  const b = String(after ?? "").replace(/\n$/, "").split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
  const rows = a.slice(0, start).map((text) => [" ", text]);
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  if (midA.length * midB.length > MAX_CELLS) {
    rows.push(...midA.map((t) => ["-", t]), ...midB.map((t) => ["+", t]));
  } else {
    const n = midA.length;
    const m = midB.length;
    const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i][j] = midA[i] === midB[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) { rows.push([" ", midA[i]]); i++; j++; }
      else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) { rows.push(["+", midB[j]]); j++; }
      else { rows.push(["-", midA[i]]); i++; }
    }
  }
  rows.push(...a.slice(endA).map((text) => [" ", text]));
  return rows;
}

// Rows as a <pre>, or a unified patch's text coloured by its lines' first characters.
export function diffView(rows, label) {
  const pre = el("pre", { class: "diff", "aria-label": label });
  for (const [op, text] of rows) {
    pre.append(el("span", { class: op === "+" ? "add" : op === "-" ? "del" : op === "@" ? "hunk" : "same", text: `${op === "@" ? "" : op} ${text}\n` }));
  }
  return pre;
}

export function patchRows(text) {
  return String(text).split("\n").map((line) => {
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("***")) return ["@", line];
    if (line.startsWith("@@") || line.startsWith("diff ")) return ["@", line];
    if (line.startsWith("+")) return ["+", line.slice(1)];
    if (line.startsWith("-")) return ["-", line.slice(1)];
    return [" ", line.startsWith(" ") ? line.slice(1) : line];
  });
}

export const changed = (rows) => rows.filter(([op]) => op === "+" || op === "-").length;
