// A transcript as something to read: each turn a card with its role, model, time and a
// copy-link; each tool call with its result under it, named by its tool, in monospace;
// commands as commands, file writes, edits and patches as diffs; long parts folded with
// their size; thinking folded; errors, evictions, summaries and sub-agent turns marked
// (a sub-agent's turns grouped, its own session linked); ANSI codes stripped. A turn a
// retraction took back is struck through.

import { api } from "./api.js";
import { count, el, q, say, size, when } from "./dom.js";
import { diffView, lineDiff, patchRows } from "./diff.js";

const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;
export const plain = (text) => String(text ?? "").replace(ANSI, "");

const FOLD_CHARS = 1500;
const FOLD_LINES = 25;

export function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.filter((p) => !["thinking", "redacted_thinking", "reasoning"].includes(p.type))
      .map((p) => p.text ?? (typeof p.content === "string" ? p.content : `[${p.type}]`)).join("\n");
  }
  return "";
}

function thinkingOf(event) {
  const parts = [...(Array.isArray(event.thinking) ? event.thinking : []),
    ...(Array.isArray(event.content) ? event.content.filter((p) => ["thinking", "redacted_thinking", "reasoning"].includes(p.type)) : [])];
  return parts.map((p) => p.thinking ?? p.text ?? "").join("\n\n");
}

const isLong = (text) => text.length > FOLD_CHARS || text.split("\n").length > FOLD_LINES;

// Text folded under a summary giving what it is and its size when it is long.
export function folded(what, text, { cls = "content", mono = false, open = false } = {}) {
  const body = el(mono ? "pre" : "p", { class: cls, text });
  if (!isLong(text)) return body;
  const lines = text.split("\n").length;
  return el("details", { class: "fold", open }, el("summary", { text: `${what} (${lines} lines, ${size(text.length)})` }), body);
}

// A sub-agent's run, folded: how many turns, and how many of its tool calls failed.
function runLabel(run) {
  const turns = `Sub-agent run: ${run.count} turn${run.count > 1 ? "s" : ""}`;
  const errors = run.errors ? ` · ${run.errors} tool error${run.errors > 1 ? "s" : ""}` : "";
  run.firstChild.textContent = turns + errors;
  run.classList.toggle("has-errors", Boolean(run.errors));
}

function thinkingBox(text) {
  return el("details", { class: "thinking" },
    el("summary", { text: text ? `thinking (${text.length} characters)` : "thinking (not readable)" }),
    el("p", { class: "content muted", text }));
}

function parsed(args) {
  if (args && typeof args === "object") return args;
  try { return JSON.parse(args); } catch { return null; }
}

// What a call asked for, drawn as what it is: a command, a file written, an edit, a patch.
function argumentsView(name, raw) {
  const args = parsed(raw);
  const text = typeof raw === "string" ? raw : JSON.stringify(raw ?? {});
  const lower = String(name || "").toLowerCase();
  if (args && typeof args === "object") {
    const command = args.command ?? args.cmd;
    if (command !== undefined && /bash|shell|exec|run|command|terminal/.test(lower)) {
      const line = Array.isArray(command) ? command.join(" ") : String(command);
      const extra = Object.entries(args).filter(([k]) => k !== "command" && k !== "cmd");
      return el("div", { class: "command" }, folded("command", `$ ${line}`, { cls: "cmd", mono: true }),
        extra.length ? el("div", { class: "muted", text: extra.map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ") } ) : null);
    }
    const file = args.file_path ?? args.path ?? args.filename;
    if (typeof args.old_string === "string" && typeof args.new_string === "string") {
      return fileChange(file, lineDiff(args.old_string, args.new_string), "edit");
    }
    if (Array.isArray(args.edits) && args.edits.every((e) => typeof e.old_string === "string")) {
      return fileChange(file, args.edits.flatMap((e) => [["@", "…"], ...lineDiff(e.old_string, e.new_string ?? "")]), "edits");
    }
    if (typeof args.content === "string" && file && /write|create|save/.test(lower)) {
      return fileChange(file, args.content.split("\n").map((t) => ["+", t]), "new content");
    }
    const patch = [args.patch, args.input, args.diff].find((v) => typeof v === "string" && /^(\*\*\* Begin Patch|diff --git|--- )/m.test(v));
    if (patch) return fileChange(file || "patch", patchRows(patch), "patch");
  } else if (/^(\*\*\* Begin Patch|diff --git)/.test(text)) {
    return fileChange("patch", patchRows(text), "patch");
  }
  if (args && typeof args === "object" && !Array.isArray(args) && Object.keys(args).length) return fieldsView(args);
  return folded("arguments", text, { cls: "args", mono: true });
}

// Arguments as what they say: each field by its name, text as text (a prompt's lines as
// lines), other values as compact JSON; the whole as JSON only when asked.
function fieldsView(args) {
  const rows = Object.entries(args).map(([key, value]) => {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    return el("div", {}, el("dt", { text: key }),
      el("dd", {}, folded(key, plain(text), typeof value === "string" ? {} : { cls: "args-value", mono: true })));
  });
  const fields = el("dl", { class: "fields" }, rows);
  const json = el("button", { type: "button", class: "plain json-toggle", "aria-pressed": "false", text: "JSON",
    title: "Show the arguments as JSON", onclick: () => {
      const shown = json.getAttribute("aria-pressed") === "true";
      json.setAttribute("aria-pressed", String(!shown));
      if (shown) box.querySelector("pre.args")?.remove();
      else box.append(el("pre", { class: "args", text: JSON.stringify(args, null, 2) }));
      fields.hidden = !shown;
    } });
  const box = el("div", { class: "arguments" }, fields, json);
  return box;
}

// What Claude Code writes into a user's turn for a slash command or its output, as
// what it is: the command as typed, its output as output, a caveat muted.
const TAGGED = /<(command-name|command-message|command-args|local-command-stdout|local-command-stderr|local-command-caveat)>([\s\S]*?)<\/\1>/g;

export function commandView(text) {
  const parts = Object.fromEntries([...text.matchAll(TAGGED)].map((m) => [m[1], m[2].trim()]));
  if (!Object.keys(parts).length || text.replace(TAGGED, "").trim()) return null;
  const out = [];
  if (parts["command-name"] !== undefined) {
    const typed = [parts["command-name"], parts["command-args"]].filter(Boolean).join(" ");
    out.push(el("p", { class: "slash" }, el("code", { text: typed }), el("span", { class: "badge", text: "slash command" })));
  }
  for (const kind of ["local-command-stdout", "local-command-stderr"]) {
    if (parts[kind] !== undefined) out.push(folded("output", plain(parts[kind]) || "(no output)", { cls: "content output", mono: true }));
  }
  if (parts["local-command-caveat"]) out.push(el("p", { class: "muted", text: parts["local-command-caveat"] }));
  return el("div", { class: "command-turn" }, out);
}

// The exit code a result says it ended with (Claude Code's "Exit code N", Codex's
// "Process exited with code N" or its metadata), or null.
export function exitCode(event, text) {
  if (Number.isInteger(event.x_exit_code)) return event.x_exit_code;
  const said = /^Exit code (-?\d+)/.exec(text) || /^Process exited with code (-?\d+)$/m.exec(text.slice(0, 400));
  if (said) return Number(said[1]);
  if (text.startsWith("{")) {
    try { const code = JSON.parse(text).metadata?.exit_code; if (Number.isInteger(code)) return code; } catch { /* not JSON */ }
  }
  return null;
}

function fileChange(file, rows, what) {
  const view = diffView(rows, `${what} of ${file}`);
  const adds = rows.filter(([op]) => op === "+").length;
  const dels = rows.filter(([op]) => op === "-").length;
  const head = `${file} · ${what} · +${adds} −${dels}`;
  if (rows.length <= FOLD_LINES) return el("div", { class: "file-change" }, el("div", { class: "file", text: head }), view);
  return el("details", { class: "fold file-change" }, el("summary", { class: "file", text: `${head} (${rows.length} lines)` }), view);
}

function linkButton(sessionId, seq) {
  return el("button", { type: "button", class: "link-turn plain", "aria-label": `Copy a link to #${seq}`, title: "Copy a link to this turn",
    onclick: async () => {
      const url = `${location.origin}${location.pathname}#/session/${sessionId}?${q({ seq })}`;
      history.replaceState(null, "", url);
      mark(seq);
      try { await navigator.clipboard.writeText(url); say("Link copied.", true); } catch { say(`Link: ${url}`, true); }
    },
    text: `#${seq}` });
}

// Highlight the turn with this seq (and unfold what holds it); returns it.
export function mark(seq) {
  for (const old of document.querySelectorAll(".target")) old.classList.remove("target");
  const turn = document.getElementById(`turn-${seq}`);
  if (!turn) return null;
  for (let up = turn.parentElement; up; up = up.parentElement) if (up.tagName === "DETAILS") up.open = true;
  turn.classList.add("target");
  return turn;
}

export const PAGE = 200;  // events drawn at a time: a page, however long the session

// A session's events, all of them held, a page of them drawn (`from` to `to`): a long
// session stays a short page. Its tool calls are timed over every event, for the
// timeline; its failed results are known over every event, for e/E.
export class Transcript {
  constructor(root, sessionId, children, { paged = () => {}, prices = {} } = {}) {
    this.root = root;
    this.prices = prices;  // model -> USD per million tokens, for an estimate per turn
    this.sessionId = sessionId;
    this.children = new Map(children.filter((c) => c.tool_call_id).map((c) => [c.tool_call_id, c.id]));
    this.paged = paged;  // told whenever what is drawn or held changes
    this.events = [];
    this.at = new Map();  // seq -> index in events
    this.timing = new Map();  // tool_call_id -> { name, start, end, error, seq }, every event
    this.failures = [];  // the seqs of failed results, in order
    this.calls = new Map();  // tool_call_id -> { box, name }, of the page drawn
    this.run = null;  // the sub-agent run being added to
    this.from = 0;
    this.to = 0;
    this.first = null;
    this.last = null;
    root.addEventListener("focusin", (event) => this.enter(event.target.closest(".turn")));
  }

  // Events held: read (drawn while the first page is not full) or appended live (drawn
  // when the page drawn is the session's end).
  add(events, { live = false } = {}) {
    const following = live && this.atEnd;
    for (const event of events) this.hold(event);
    this.extend(following ? this.events.length : this.from + PAGE);
  }

  hold(event) {
    this.at.set(event.seq, this.events.length);
    this.events.push(event);
    const t = Date.parse(event.ts);
    if (!isNaN(t)) { this.first ??= t; this.last = Math.max(this.last ?? t, t); }
    if (event.type === "message") {
      for (const call of event.tool_calls || []) {
        this.timing.set(call.id, { name: call.function?.name, start: t, end: null, error: false, seq: event.seq });
      }
      const failed = Boolean(event.is_error || event.x_is_error);
      if (event.role === "tool" && failed) this.failures.push(event.seq);
      const call = event.role === "tool" && this.timing.get(event.tool_call_id);
      if (call) { call.end = t; call.error = failed; }
    }
  }

  // Draw the events after the page's last, up to index `limit`.
  extend(limit) {
    const upto = Math.min(this.events.length, limit);
    if (upto <= this.to) { this.paged(); return; }
    const fragment = document.createDocumentFragment();
    const drawn = this.events.slice(this.to, upto);
    for (const event of drawn) this.place(event, fragment);
    this.root.append(fragment);
    this.quiet(this.root);
    this.to = upto;
    for (const event of drawn) if (event.type === "retraction") this.retract(event);
    this.paged();
  }

  // Draw the page that starts at event index `from` (clamped, page-aligned).
  page(from) {
    const last = Math.max(0, Math.ceil(this.events.length / PAGE) - 1) * PAGE;
    this.from = Math.min(last, Math.max(0, Math.floor(from / PAGE) * PAGE));
    this.to = this.from;
    this.calls = new Map();
    this.run = null;
    this.root.replaceChildren();
    this.extend(this.from + PAGE);
  }

  // Make sure the event with this seq is drawn (its page drawn if need be); its element.
  reveal(seq) {
    const index = this.at.get(Number(seq));
    if (index === undefined) return null;
    if (index < this.from || index >= this.to) this.page(index);
    return mark(seq);
  }

  get atEnd() { return this.to >= this.events.length; }

  // One tab stop per turn: what is inside a turn is reached from it (tabbable while the
  // focus is in that turn), so a long session is not hundreds of stops.
  quiet(scope) {
    for (const inner of scope.querySelectorAll(".turn a[href], .turn button, .turn summary")) {
      if (inner === this.active || this.active?.contains(inner)) continue;
      inner.setAttribute("tabindex", "-1");
    }
  }

  enter(turn) {
    if (turn === this.active) return;
    const before = this.active;
    this.active = turn;
    if (before) this.quiet(before);
    if (turn) for (const inner of turn.querySelectorAll("a[href], button, summary")) inner.removeAttribute("tabindex");
  }

  place(event, fragment) {
    if (!event.x_sidechain) this.run = null;  // the main thread again: a run ends
    if (event.type === "message" && event.role === "tool" && this.calls.has(event.tool_call_id)) {
      this.result(event, this.calls.get(event.tool_call_id));
      return;
    }
    const card = this.card(event);
    if (event.x_sidechain) {
      if (!this.run) {
        this.run = el("details", { class: "subagent-run" }, el("summary", { text: "" }));
        this.run.count = 0;
        fragment.append(this.run);
      }
      this.run.count += 1;
      runLabel(this.run);
      this.run.append(card);
    } else {
      fragment.append(card);
    }
  }

  card(event) {
    const seq = event.seq;
    const base = { id: `turn-${seq}`, tabindex: "0", "data-turn": seq, "data-seq": seq };
    const head = (label, ...rest) => el("h3", {}, el("span", { class: "who", text: label }), ...rest,
      event.ts ? el("time", { datetime: event.ts, text: when(event.ts) }) : null, linkButton(this.sessionId, seq));
    if (event.type === "summary") {
      return el("article", { ...base, class: "turn summary" }, head(`Summary of everything through #${event.through_seq}`),
        folded("summary", plain(event.content)));
    }
    if (event.type === "eviction") {
      const target = event.tool_call_id || `#${event.target_seq}`;
      return el("article", { ...base, class: "turn eviction" }, head(`Evicted ${target} from the context`),
        event.stub ? el("p", { class: "content muted", text: event.stub }) : null);
    }
    if (event.type === "title") return el("article", { ...base, class: "turn title" }, head(`Titled by ${event.source || "user"}: ${event.title}`));
    if (event.type === "reasoning") return el("article", { ...base, class: "turn reasoning" }, head("Thinking"), thinkingBox(textOf(event.content)));
    if (event.type === "retraction") {
      return el("article", { ...base, class: "turn retraction" }, head(`Took back #${event.target_seq}${event.reason ? `: ${event.reason}` : ""}`));
    }
    if (event.type !== "message") return el("article", { ...base, class: "turn other" }, head(event.type || "event"));
    const role = event.role || "?";
    const who = { user: "User", assistant: "Assistant", system: "System", tool: "Tool result" }[role] || role;
    const card = el("article", { ...base, class: `turn ${role}${event.x_sidechain ? " sidechain" : ""}` },
      head(who, event.name ? el("span", { class: "muted", text: event.name }) : null,
        event.model ? el("span", { class: "model muted", text: event.model }) : null,
        role === "assistant" ? this.spent(event) : null,
        event.x_sidechain ? el("span", { class: "badge", text: "sub-agent" }) : null));
    const thinking = thinkingOf(event);
    if (thinking || (Array.isArray(event.thinking) && event.thinking.length)) card.append(thinkingBox(thinking));
    if (role === "tool") {  // a result whose call is not in view
      this.result(event, { box: card, name: event.name || event.tool_call_id }, false);
      return card;
    }
    const content = event.content;
    if (content && typeof content === "object" && !Array.isArray(content) && content.content_ref) card.append(this.blob(event));
    else {
      const text = plain(textOf(content));
      const command = role === "user" && text.includes("<") && commandView(text);
      if (command) card.append(command);
      else if (text.trim()) card.append(role === "system" ? el("details", { class: "fold" }, el("summary", { text: `System prompt (${size(text.length)})` }), el("p", { class: "content", text }))
        : folded(role === "user" ? "message" : "answer", text));
    }
    for (const call of event.tool_calls || []) card.append(this.call(call, event));
    return card;
  }

  // A turn's tokens and, where its model has a price, what they cost (an estimate).
  spent(event) {
    const usage = event.usage;
    if (!usage || typeof usage !== "object") return null;
    const [tokensIn, tokensOut, cached] = [usage.input_tokens, usage.output_tokens, usage.cached_input_tokens].map((n) => (Number.isInteger(n) && n > 0 ? n : 0));
    if (!tokensIn && !tokensOut) return null;
    const tokens = `${count(tokensIn)} in${cached ? ` (${count(cached)} cached)` : ""} · ${count(tokensOut)} out`;
    const price = this.prices[event.model];
    const usd = price && (Math.max(tokensIn - cached, 0) * price.input + cached * price.cached_input + tokensOut * price.output) / 1e6;
    return el("span", { class: "spent muted", title: price ? `${tokens} tokens, priced as ${event.model} (an estimate)` : `${tokens} tokens; no price for ${event.model || "its model"}`,
      text: price ? `${tokens} · ≈ $${usd < 0.01 ? usd.toFixed(4) : usd.toFixed(2)}` : `${tokens} · no price` });
  }

  call(call, event) {
    const fn = call.function || {};
    const child = this.children.get(call.id);
    const box = el("div", { class: "tool-call", "data-call": call.id },
      el("div", { class: "call-head" }, el("strong", { text: fn.name || "tool", title: `call ${call.id}` }),
        child ? el("a", { href: `#/session/${child}`, class: "child-link", text: "Open the sub-agent's session" }) : null),
      argumentsView(fn.name, fn.arguments));
    this.calls.set(call.id, { box, name: fn.name });
    return box;
  }

  // A result under its call (`own`: the result has its own id; else the card it is in has).
  result(event, call, own = true) {
    const failed = Boolean(event.is_error || event.x_is_error);
    const content = event.content;
    const text = typeof content === "object" && content?.content_ref ? "" : plain(textOf(content));
    const code = exitCode(event, text);
    const block = el("div", { class: `result${failed ? " failed" : ""}`, id: own ? `turn-${event.seq}` : null, tabindex: own ? "-1" : null, "data-seq": event.seq },
      el("div", { class: "result-head" }, el("span", { text: `${failed ? "Failed: " : "Result of "}${call.name || "the call"}` }),
        failed ? el("span", { class: "badge bad", text: "error" }) : null,
        code !== null ? el("span", { class: `badge exit${code ? " bad" : ""}`, title: "The exit code the source records", text: `exit ${code}` }) : null,
        linkButton(this.sessionId, event.seq)));
    if (content && typeof content === "object" && !Array.isArray(content) && content.content_ref) block.append(this.blob(event));
    else block.append(folded("output", text, { cls: "content output", mono: true, open: failed }));
    const child = event.x_subagent && this.children.get(event.tool_call_id);
    if (child && !call.box.querySelector(".child-link")) block.append(el("a", { href: `#/session/${child}`, class: "child-link", text: "Open the sub-agent's session" }));
    call.box.append(block);
    if (failed) {
      call.box.classList.add("failed");
      const run = call.box.closest("details.subagent-run");  // its errors said on the fold
      if (run) { run.errors = (run.errors || 0) + 1; runLabel(run); }
    }
  }

  blob(event) {
    const content = event.content;
    const preview = el("pre", { class: "content output", text: `${plain(content.preview || "")}…` });
    const button = el("button", { class: "plain load-blob", text: `Load ${content.bytes} bytes` });
    button.addEventListener("click", async () => {
      try {
        const page = await api(`/v1/sessions/${this.sessionId}/events?${q({ after: event.seq - 1, limit: 1, raw: false })}`);
        preview.replaceWith(folded("output", plain(textOf(page.events[0].content)), { cls: "content output", mono: true, open: true }));
        button.remove();
      } catch (error) { say(error.message); }
    });
    return el("div", { class: "blob" }, preview, button);
  }

  retract(event) {
    const target = document.getElementById(`turn-${event.target_seq}`);
    if (target) { target.classList.add("retracted"); target.title = `Taken back by #${event.seq}`; }
  }

  // The tool calls of every event with their times, for the timeline.
  timed() {
    return [...this.timing.values()].filter((c) => !isNaN(c.start)).map((c) => ({ ...c, end: isNaN(c.end) ? null : c.end }));
  }
}
