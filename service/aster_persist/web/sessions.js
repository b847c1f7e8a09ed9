// The list of sessions that tells each one's story (source tool, models, turns, tool
// calls and errors, tokens, duration, last activity, state), with filters and sorting
// kept in the address (so a list can be linked) and pages of 50. Used by the landing
// view (every project) and by a project's view (its own sessions).

import { api } from "./api.js";
import { ago, count, duration, el, navigate, projectName, q, throttle, when, wrap } from "./dom.js";
import { subscribe } from "./live.js";
import { isRunning, runningBadge } from "./running.js";

const COLUMNS = [
  ["title", "Session"], ["project", "Project"], ["source", "Source"], ["models", "Model"],
  ["turns", "Turns", "turns"], ["tool_calls", "Tool calls", "tool_calls"], ["tool_errors", "Errors", "tool_errors"],
  ["tokens", "Tokens", "tokens"], ["duration", "Duration", "duration"], ["updated", "Last activity", "updated"], ["state", "State"],
];
const FILTERS = ["repo_root", "source_tool", "model", "since", "until", "errors", "sort", "order"];

export function sessionRow(s, { project = true } = {}) {
  const title = el("td", { class: "title" },
    el("a", { href: `#/session/${s.id}`, title: s.id, text: s.title || "(untitled)" }),
    isRunning(s.id) ? runningBadge() : null,
    s.parent_id ? el("span", { class: "badge", title: "Started by another session", text: "sub-agent" }) : null,
    s.alias ? el("span", { class: "badge muted", text: s.alias }) : null,
    s.machine ? el("span", { class: "badge muted", title: "A read-only copy: the session lives on that machine", text: `on ${s.machine}` }) : null);
  const cells = {
    title,
    project: el("td", { class: "project" }, el("a", { href: `#/project?${q({ repo_root: s.repo_root })}`, text: projectName(s.repo_root), title: s.repo_root })),
    source: el("td", { text: s.source_tool || "api" }),
    models: el("td", { class: "models", text: (s.models || []).join(", ") || "—" }),
    turns: el("td", { class: "num", text: s.turns }),
    tool_calls: el("td", { class: "num", text: s.tool_calls }),
    tool_errors: el("td", { class: s.tool_errors ? "num bad" : "num", text: s.tool_errors }),
    tokens: el("td", { class: "num", title: `${s.tokens_in} in, ${s.tokens_out} out`, text: s.tokens_in + s.tokens_out ? count(s.tokens_in + s.tokens_out) : "—" }),
    duration: el("td", { class: "num", text: s.timed === false ? "—" : duration(s.duration_ms) }),
    updated: s.timed === false  // a source without times: not "just now"
      ? el("td", { class: "muted undated", title: `No times of its own; imported ${when(s.updated_at)}`, text: "no time" })
      : el("td", { title: when(s.updated_at), text: ago(s.updated_at) }),
    state: el("td", { class: `state-${s.state}`, text: s.state }),
  };
  for (const [key, label] of COLUMNS) cells[key].dataset.label = label;
  return el("tr", { "data-id": s.id }, ...COLUMNS.filter(([key]) => project || key !== "project").map(([key]) => cells[key]));
}

// A filterable, sortable, paged table of sessions; `fixed` are filters the view sets
// (a project's repo_root), `params` the address's, `address(params)` where a change goes.
export async function sessionTable(signal, params, { fixed = {}, address }) {
  const wanted = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || undefined]));
  Object.assign(wanted, fixed);
  const sort = wanted.sort || "updated";
  const order = wanted.order || "desc";
  const [facets, projects] = await Promise.all([api("/v1/sessions/facets"), fixed.repo_root ? null : api("/v1/projects")]);
  const go = (changes) => {  // over the address as it is now: two changes in a row both hold
    const now = new URLSearchParams(location.hash.split("?")[1] || "");
    const next = { ...Object.fromEntries(FILTERS.map((k) => [k, now.get(k) || undefined])), ...changes };
    navigate(address(next));
  };
  const select = (name, label, options, value) => el("label", {}, label, " ",
    el("select", { name, onchange: (e) => go({ [name]: e.target.value || undefined }) },
      el("option", { value: "", text: "any" }),
      options.map(([v, text]) => el("option", { value: v, selected: v === value, text }))));
  const dateInput = (name, label) => el("label", {}, label, " ",
    el("input", { type: "date", name, value: wanted[name] || "", onchange: (e) => go({ [name]: e.target.value || undefined }) }));
  const filters = el("form", { class: "toolbar filters", "aria-label": "Filter sessions", onsubmit: (e) => e.preventDefault() },
    projects ? select("repo_root", "Project", projects.items.map((p) => [p.repo_root, p.repo_root]), wanted.repo_root) : null,
    select("source_tool", "Source", facets.source_tools.map((f) => [f.value, `${f.value} (${f.sessions})`]), wanted.source_tool),
    select("model", "Model", facets.models.map((f) => [f.value, `${f.value} (${f.sessions})`]), wanted.model),
    dateInput("since", "Active from"), dateInput("until", "to"),
    select("errors", "Tool errors", [["true", "with errors"], ["false", "without"]], wanted.errors),
    el("button", { type: "button", class: "plain", onclick: () => go(Object.fromEntries(FILTERS.map((k) => [k, undefined]))), text: "Clear" }));
  const showProject = !fixed.repo_root;
  const head = el("tr", {}, ...COLUMNS.filter(([key]) => showProject || key !== "project").map(([, label, key]) => {
    if (!key) return el("th", { scope: "col", text: label });
    const active = sort === key;
    const next = active && order === "desc" ? "asc" : "desc";
    return el("th", { scope: "col", "aria-sort": active ? (order === "desc" ? "descending" : "ascending") : "none" },
      el("button", { type: "button", class: "sort", "data-sort": key, onclick: () => go({ sort: key, order: next }),
        text: `${label}${active ? (order === "desc" ? " ▼" : " ▲") : ""}` }));
  }));
  const body = el("tbody");
  const table = el("table", { class: "sessions" }, el("thead", {}, head), body);
  const more = el("button", { class: "plain", text: "More sessions", hidden: true });
  const status = el("p", { class: "muted", "aria-live": "polite" });
  let cursor = null;
  let shown = 0;
  const query = () => ({ ...wanted, sort, order, limit: 50 });
  const load = async (reset) => {
    const page = await api(`/v1/sessions?${q({ ...query(), cursor: reset ? null : cursor })}`);
    if (reset) { body.replaceChildren(); shown = 0; }
    body.append(...page.items.map((s) => sessionRow(s, { project: showProject })));
    shown += page.items.length;
    if (!shown) body.append(el("tr", {}, el("td", { colspan: 11, text: "No sessions match." })));
    cursor = page.next_cursor;
    more.hidden = !cursor;
    status.textContent = `${shown} session${shown === 1 ? "" : "s"} shown${cursor ? ", more below" : ""}.`;
  };
  more.addEventListener("click", () => load(false));
  await load(true);
  const redraw = throttle(() => { if (!cursor || shown <= 50) load(true); }, 500);
  subscribe((kind, data) => { if (kind === "session.appended" || String(data.op || "").startsWith("session.")) redraw(); }, signal);
  return el("div", { class: "session-list" }, filters, wrap(table), status, more);
}
