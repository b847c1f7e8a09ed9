// The session view (#/session/<id>?seq=…): a header that tells the story (source tool,
// models, turns, tool calls and errors, tokens, duration, last activity, state, the
// sessions it started), a timeline of its tool calls, then the transcript: the first
// turns drawn at once, the rest a chunk a frame, then its live appends (followed when
// the reader is at the bottom, else a "new turns" button). Rename, delete to the trash,
// restore. body[data-first-turn-ms] and body[data-render-ms] report the draw.

import { api, headers } from "./api.js";
import { timeline } from "./chart.js";
import { count, duration, el, inProject, main, navigate as navigateTo, q, say, throttle, titled, when } from "./dom.js";
import { follow } from "./live.js";
import { route } from "./router.js";
import { mark, Transcript } from "./transcript.js";

const FIRST = 60;  // events in the first, quick page
const CHUNK = 250;  // events drawn a frame after that
const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));

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
    item("Duration", duration(detail.duration_ms)),
    item("Last activity", when(detail.updated_at)),
    item("State", el("span", { class: `state-${detail.state}`, text: detail.state }), ` · ${detail.events} events`),
    detail.secrets ? item("Secrets", el("span", { class: "bad", text: String(detail.secrets) })) : null,
    detail.parent_id ? item("Started by", link(detail.parent_id, detail.parent_id)) : null,
    detail.children?.length ? item("Sub-agents", ...detail.children.map((c) => el("div", {}, link(c.id, c.title || c.id)))) : null);
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
  main.replaceChildren(el("section", { class: "session" }, heading, header,
    el("div", { class: "toolbar" }, rename, remove,
      el("button", { type: "button", class: "plain", text: "Download JSONL", onclick: () => download(id, revealed) })),
    secrets, chart, list, fresh));
  heading.focus();
  const transcript = new Transcript(list, id, detail.children || []);
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
    mark(link.dataset.seq)?.scrollIntoView({ block: "center" });
  });

  let last = 0;
  let after = 0;
  let limit = FIRST;
  let firstShown = false;
  for (;;) {
    const page = await api(`/v1/sessions/${id}/events?${q({ after, limit, inline: false, raw: false, ...redact })}`);
    if (signal.aborted) return;
    for (let at = 0; at < page.events.length; at += CHUNK) {
      transcript.add(page.events.slice(at, at + CHUNK));
      if (!firstShown) {
        firstShown = true;
        await frame();
        document.body.dataset.firstTurnMs = String(Math.round(performance.now() - started));
        performance.mark("aster:first-turn");
      } else if (at + CHUNK < page.events.length) await frame();
    }
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
    const turn = mark(target);
    if (turn) { turn.scrollIntoView({ block: "center" }); turn.focus(); }
  }
  const atBottom = () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120;
  let unseen = 0;
  fresh.addEventListener("click", () => { list.lastElementChild?.scrollIntoView({ block: "end" }); unseen = 0; fresh.hidden = true; });
  window.addEventListener("scroll", () => { if (atBottom()) { unseen = 0; fresh.hidden = true; } }, { signal });
  const refresh = throttle(async () => {
    try {
      detail = await api(`/v1/sessions/${id}`);
      header.replaceChildren(story(detail));
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
      const following = atBottom();
      transcript.add([event]);
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

// Move the focus to the next (1) or previous (-1) turn of a session; false elsewhere.
export function stepTurn(direction) {
  const turns = [...document.querySelectorAll("#events [data-turn]")].filter((t) => t.offsetParent !== null);
  if (!turns.length) return false;
  const focused = turns.indexOf(document.activeElement);
  let index;
  if (focused >= 0) index = focused + direction;
  else {
    const below = turns.findIndex((t) => t.getBoundingClientRect().top >= 0);
    index = direction > 0 ? Math.max(0, below) : Math.max(0, below - 1);
  }
  const turn = turns[Math.min(turns.length - 1, Math.max(0, index))];
  turn.focus();
  turn.scrollIntoView({ block: "start" });
  return true;
}

// e / E: the next (previous) failed tool result, in the order of the transcript; folded
// runs and outputs around it are opened first. False when there is none.
export function stepError(direction) {
  const errors = [...document.querySelectorAll("#events .result.failed")];
  if (!errors.length) return false;
  const at = errors.findIndex((e) => e === document.activeElement || e.contains(document.activeElement));
  let index;
  if (at >= 0) index = (at + direction + errors.length) % errors.length;
  else {
    const below = errors.findIndex((e) => e.getBoundingClientRect().top > 1);
    index = direction > 0 ? (below < 0 ? 0 : below) : (below <= 0 ? errors.length - 1 : below - 1);
  }
  const target = errors[index];
  for (let fold = target.closest("details"); fold; fold = fold.parentElement.closest("details")) fold.open = true;
  if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
  target.focus();
  target.scrollIntoView({ block: "start" });
  return true;
}
