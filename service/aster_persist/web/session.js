// The session view (#/session/<id>?seq=…): a header that tells the story (source tool,
// models, turns, tool calls and errors, tokens, cost, duration, last activity, state,
// the sessions it started), a timeline of its tool calls, then the transcript a page of
// events at a time: the first turns drawn at once, the rest of the page a frame later,
// then its live appends (followed when the reader is at the bottom of the last page,
// else a "new turns" button). Rename, delete to the trash, restore; the keys that move
// between turns, errors and ends. body[data-first-turn-ms] and body[data-render-ms]
// report the draw.

import { api, headers } from "./api.js";
import { timeline } from "./chart.js";
import { count, duration, el, inProject, main, navigate as navigateTo, q, say, throttle, titled, when } from "./dom.js";
import { follow } from "./live.js";
import { route } from "./router.js";
import { isRunning, watchRunning } from "./running.js";
import { PAGE, Transcript } from "./transcript.js";

const FIRST = 60;  // events in the first, quick page
const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
let shown = null;  // the transcript in view, for the keys

function story(detail) {
  const item = (term, ...value) => el("div", {}, el("dt", { text: term }), el("dd", {}, ...value));
  const link = (id, text) => el("a", { href: `#/session/${id}`, text });
  return el("dl", { class: "story" },
    item("Project", el("a", { href: `#/project?${q({ repo_root: detail.repo_root })}`, text: detail.repo_root })),
    item("Source", detail.source_tool || "api", detail.git_branch ? el("span", { class: "muted", text: ` · ${detail.git_branch}` }) : null),
    detail.machine ? item("Lives on", el("span", { text: detail.machine }), el("span", { class: "muted", text: " · a read-only copy here" })) : null,
    item("Model", (detail.models || []).join(", ") || "—"),
    item("Turns", String(detail.turns)),
    item("Tool calls", String(detail.tool_calls)),
    item("Tool errors", el("span", { class: detail.tool_errors ? "bad" : "", text: String(detail.tool_errors) })),
    item("Tokens", detail.tokens_in + detail.tokens_out ? `${count(detail.tokens_in)} in · ${count(detail.tokens_out)} out` : "—"),
    item("Cost (estimate)", el("span", { id: "session-cost", title: detail.cost?.unpriced_models.length ? `no price for ${detail.cost.unpriced_models.join(", ")}: tokens counted, not priced` : "",
      text: detail.cost?.cost_usd == null ? (detail.cost?.unpriced_models.length ? "no price" : "—") : `$${detail.cost.cost_usd.toFixed(2)}` })),
    item("Duration", detail.timed === false ? "—" : duration(detail.duration_ms)),
    item("Last activity", detail.timed === false ? `no times of its own (imported ${when(detail.updated_at)})` : when(detail.updated_at)),
    item("State", el("span", { class: `state-${detail.state}`, text: detail.state }), ` · ${detail.events} events`),
    detail.secrets ? item("Secrets", el("span", { class: "bad", text: String(detail.secrets) })) : null,
    detail.parent_id ? item("Started by", link(detail.parent_id, detail.parent_title || detail.parent_id)) : null,
    detail.children?.length ? item("Sub-agents", ...detail.children.map((c) => el("div", { class: "child", "data-id": c.id }, link(c.id, c.title || c.id),
      el("span", { class: "muted", text: ` · ${c.turns} turns` }),
      c.tool_errors ? el("span", { class: "bad", text: ` · ${c.tool_errors} tool error${c.tool_errors > 1 ? "s" : ""}` }) : null))) : null);
}

// The story in one line: where it came from, its turns, errors, tokens and time.
function gistOf(detail) {
  const parts = [detail.source_tool || "api", `${detail.turns} turns`, `${detail.tool_calls} tool calls`];
  if (detail.tool_errors) parts.push(`${detail.tool_errors} tool error${detail.tool_errors > 1 ? "s" : ""}`);
  if (detail.tokens_in + detail.tokens_out) parts.push(`${count(detail.tokens_in + detail.tokens_out)} tokens`);
  parts.push(duration(detail.duration_ms));
  return parts.join(" · ");
}

export async function sessionView(signal, params, id) {
  const started = performance.now();
  let detail;
  try {
    detail = await api(`/v1/sessions/${id}`);
  } catch (error) {
    if (signal.aborted) return;
    if (error.status !== 404) throw error;
    const restore = el("button", { text: "Restore from the trash" });
    restore.addEventListener("click", async () => {
      try { await api(`/v1/sessions/${id}/restore`, { method: "POST" }); route(); } catch (e) { say(e.message); }
    });
    main.replaceChildren(el("section", {}, titled("Session not found"),
      el("p", { text: `No live session ${id}. If it was deleted, it may be in the trash.` }), restore));
    return;
  }
  if (detail.parent_id) {  // named by its title, not its id
    try { detail.parent_title = (await api(`/v1/sessions/${detail.parent_id}`)).title; } catch { /* gone: its id */ }
  }
  if (signal.aborted) return;
  inProject(detail.repo_root);
  const heading = titled(detail.title || "(untitled)");
  heading.id = "session-title";
  document.title = `${detail.title || "Session"} · aster-persist`;
  const header = el("div", { id: "session-story" }, story(detail));
  // A secret in the transcript is shown masked ([redacted: <kind>]) until asked for.
  const revealed = params.get("reveal") === "1";
  const redact = revealed ? {} : { redact: true };
  const toggle = (on) => {
    const next = new URLSearchParams(params);
    if (on) next.set("reveal", "1"); else next.delete("reveal");
    navigateTo(`#/session/${id}?${next}`);
  };
  const secrets = detail.secrets ? el("p", { id: "secrets-notice", class: "notice" },
    revealed ? `${count(detail.secrets)} secret${detail.secrets > 1 ? "s" : ""} shown as they were written. `
      : `${count(detail.secrets)} secret${detail.secrets > 1 ? "s" : ""} in this session, shown masked. `,
    el("button", { type: "button", class: "plain", text: revealed ? "Mask secrets" : "Reveal secrets",
      onclick: () => toggle(!revealed) })) : null;
  const rename = el("form", { class: "toolbar" },
    el("label", { for: "rename-input", text: "Title" }),
    el("input", { id: "rename-input", name: "title", value: detail.title || "" }),
    el("button", { type: "submit", text: "Rename" }));
  rename.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api(`/v1/sessions/${id}`, { method: "PATCH", body: { title: rename.title.value } });
      heading.textContent = rename.title.value;
      say("Renamed.", true);
    } catch (error) { say(error.message); }
  });
  const remove = el("button", { class: "danger", text: "Delete" });
  remove.addEventListener("click", async () => {
    if (!confirm("Move this session to the trash?")) return;
    try { await api(`/v1/sessions/${id}`, { method: "DELETE" }); say("Moved to the trash.", true); route(); } catch (error) { say(error.message); }
  });
  const chart = el("div", { id: "timeline" });
  const list = el("div", { id: "events" });
  const fresh = el("button", { id: "new-turns", class: "floating", hidden: true, text: "New turns ↓" });
  const pagers = [el("nav", { class: "pager", "aria-label": "Pages of events, above" }), el("nav", { class: "pager", "aria-label": "Pages of events, below" })];
  // On a phone the story, the tools and the timeline fold under one line, so the first
  // turn is on the first screen; on wider screens they start open.
  const gist = el("summary", { text: gistOf(detail) });
  const about = el("details", { class: "about", open: !matchMedia("(max-width: 40rem)").matches }, gist, header,
    el("div", { class: "toolbar" }, rename, remove,
      el("button", { type: "button", class: "plain", text: "Download JSONL", onclick: () => download(id, revealed) })),
    chart);
  main.replaceChildren(el("section", { class: "session" }, heading, about, secrets, pagers[0], list, pagers[1], fresh));
  heading.focus();
  const mark = el("span", { class: "badge running", title: "Being written now", text: "running", hidden: true });
  heading.after(mark);
  watchRunning(signal, () => { mark.hidden = !isRunning(id); });
  const transcript = shown = new Transcript(list, id, detail.children || [], { paged: () => drawPagers(pagers, transcript), prices: detail.cost?.prices || {} });
  const hrefOf = (seq) => `#/session/${id}?${q({ seq })}`;
  const drawTimeline = () => {
    const calls = transcript.timed();
    chart.replaceChildren(calls.length ? timeline(calls, transcript.first, transcript.last, hrefOf) : "");
  };
  chart.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-seq]");
    if (!link) return;
    event.preventDefault();
    history.replaceState(null, "", hrefOf(link.dataset.seq));
    transcript.reveal(link.dataset.seq)?.scrollIntoView({ block: "center" });
  });

  let last = 0;
  let after = 0;
  let limit = FIRST;
  for (;;) {
    const page = await api(`/v1/sessions/${id}/events?${q({ after, limit, inline: false, raw: false, ...redact })}`);
    if (signal.aborted) return;
    const drawing = transcript.to < PAGE;
    transcript.add(page.events);
    if (limit === FIRST) {
      await frame();
      document.body.dataset.firstTurnMs = String(Math.round(performance.now() - started));
      performance.mark("aster:first-turn");
    } else if (drawing) await frame();
    if (page.events.length) last = page.events.at(-1).seq;
    if (!page.next_cursor) break;
    after = Number(page.next_cursor);
    limit = 2000;
  }
  drawTimeline();
  await frame();
  document.body.dataset.renderMs = String(Math.round(performance.now() - started));
  performance.mark("aster:all-turns");
  const target = params.get("seq");
  if (target) {
    const turn = transcript.reveal(target);
    if (turn) { turn.scrollIntoView({ block: "center" }); turn.focus(); }
  }
  const atBottom = () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120;
  let unseen = 0;
  fresh.addEventListener("click", () => {
    if (!transcript.atEnd) transcript.page(transcript.events.length - 1);
    list.lastElementChild?.scrollIntoView({ block: "end" });
    unseen = 0;
    fresh.hidden = true;
  });
  window.addEventListener("scroll", () => { if (atBottom()) { unseen = 0; fresh.hidden = true; } }, { signal });
  const refresh = throttle(async () => {
    try {
      detail = { ...await api(`/v1/sessions/${id}`), parent_title: detail.parent_title };
      header.replaceChildren(story(detail));
      gist.textContent = gistOf(detail);
      if (detail.title) heading.textContent = detail.title;
      drawTimeline();
    } catch { /* the feed says when the daemon is away */ }
  }, 1000);
  follow(`/v1/sessions/${id}/events/stream${revealed ? "" : "?redact=true"}`, {
    lastId: String(last),
    signal,
    onEvent: (kind, event) => {
      if (kind !== "event" || event.seq <= last) return;
      last = event.seq;
      const following = atBottom() && transcript.atEnd;
      transcript.add([event], { live: true });
      if (following) list.lastElementChild?.scrollIntoView({ block: "end" });
      else { unseen += 1; fresh.textContent = `${unseen} new turn${unseen > 1 ? "s" : ""} ↓`; fresh.hidden = false; }
      refresh();
    },
  });
}

// The transcript as its JSONL file, fetched with the token (a plain link would send none);
// its secrets redacted unless they are shown.
async function download(id, revealed) {
  try {
    const response = await fetch(`/v1/sessions/${id}/export${revealed ? "" : "?redact=true"}`, { headers: headers() });
    if (!response.ok) throw new Error(`the daemon answered ${response.status}`);
    const url = URL.createObjectURL(await response.blob());
    el("a", { href: url, download: `${id}.jsonl` }).click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (error) { say(`Could not download it: ${error.message}`); }
}

// The pages of a long session: where the page drawn is, and the way to the others.
function drawPagers(pagers, transcript) {
  const total = transcript.events.length;
  const whole = transcript.from === 0 && transcript.to >= total;
  for (const pager of pagers) {
    pager.hidden = whole;
    if (whole) { pager.replaceChildren(); continue; }
    const go = (label, from, off, key) => el("button", { type: "button", class: "plain", disabled: off, text: label,
      title: key ? `${label} (${key})` : label, onclick: () => { transcript.page(from); const turns = list(); if (turns.length) land(turns[0]); } });
    pager.replaceChildren(
      el("span", { class: "muted", text: `Events ${transcript.from + 1}–${transcript.to} of ${total.toLocaleString("en-US")}` }),
      go("First", 0, transcript.from === 0, "g"), go("Earlier", transcript.from - PAGE, transcript.from === 0),
      go("Later", transcript.to, transcript.atEnd), go("Last", total - 1, transcript.atEnd, "G"));
  }
}

const list = () => [...document.querySelectorAll("#events [data-turn]")].filter((t) => t.offsetParent !== null);

function land(turn, block = "start") {
  turn.focus({ preventScroll: true });
  turn.scrollIntoView({ block });
}

// Move the focus to the next (1) or previous (-1) turn of a session, to the next page
// from the last turn of one; false elsewhere.
export function stepTurn(direction) {
  let turns = list();
  if (!turns.length || !shown) return false;
  const focused = turns.indexOf(document.activeElement);
  let index;
  if (focused >= 0) index = focused + direction;
  else {
    const below = turns.findIndex((t) => t.getBoundingClientRect().top >= 0);
    index = direction > 0 ? Math.max(0, below) : Math.max(0, below - 1);
  }
  if (index >= turns.length && !shown.atEnd) { shown.page(shown.to); turns = list(); index = 0; }
  else if (index < 0 && shown.from > 0) { shown.page(shown.from - PAGE); turns = list(); index = turns.length - 1; }
  land(turns[Math.min(turns.length - 1, Math.max(0, index))]);
  return true;
}

// g / G: the session's first (last) turn, its page drawn.
export function stepEnd(direction) {
  if (!shown || !document.getElementById("events")) return false;
  if (direction < 0 ? shown.from > 0 : !shown.atEnd) shown.page(direction < 0 ? 0 : shown.events.length - 1);
  const turns = list();
  if (!turns.length) return false;
  land(direction < 0 ? turns[0] : turns.at(-1), direction < 0 ? "start" : "end");
  return true;
}

// e / E: the next (previous) failed tool result, in the order of the session, its page
// drawn and the folds around it opened. False when there is none.
export function stepError(direction) {
  const failures = shown?.failures || [];
  if (!failures.length || !document.getElementById("events")) return false;
  const here = document.activeElement?.closest?.("#events [data-seq]");
  const at = here ? failures.indexOf(Number(here.dataset.seq)) : -1;
  let index;
  if (at >= 0) index = (at + direction + failures.length) % failures.length;
  else {  // from where the reader is: the first one below the top of the window
    const drawn = failures.map((seq) => document.getElementById(`turn-${seq}`));
    const below = drawn.findIndex((e, i) => (e ? e.getBoundingClientRect().top > 1 : shown.at.get(failures[i]) >= shown.to));
    index = direction > 0 ? (below < 0 ? 0 : below) : (below <= 0 ? failures.length - 1 : below - 1);
  }
  const turn = shown.reveal(failures[index]);
  if (!turn) return false;
  const target = turn.classList.contains("result") ? turn : turn.querySelector(".result.failed") || turn;
  for (let fold = target.closest("details"); fold; fold = fold.parentElement.closest("details")) fold.open = true;
  if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
  land(target);
  return true;
}
