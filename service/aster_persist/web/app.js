// The aster-persist dashboard: plain DOM, the daemon's own API, no build step.
// Every request goes to the page's own origin; text from the store is only ever set as
// text (never parsed as HTML).

const main = document.getElementById("main");
const notice = document.getElementById("notice");
const liveBadge = document.getElementById("live");
const state = { token: sessionStorage.getItem("aster-token") };
const feedListeners = new Set();
const REVERTIBLE = /^(memory\.(write|edit|merge|delete|archive|restore|revert)|session\.(created|renamed|deleted|restored|pruned))$/;

// -- small helpers ------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const q = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "")).toString();

function say(message, ok = false) {
  notice.textContent = message;
  notice.className = ok ? "ok" : "";
  notice.hidden = !message;
}

function when(ts) {
  if (!ts) return "";
  const date = new Date(ts);
  return isNaN(date) ? ts : date.toLocaleString();
}

function throttle(fn, ms) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; fn(); }, ms);
  };
}

// -- the API ------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

function headers(extra = {}) {
  const out = { ...extra };
  if (state.token) out.Authorization = `Bearer ${state.token}`;
  return out;
}

async function api(path, { method = "GET", body, type, accept, extra = {} } = {}) {
  const init = { method, headers: headers(extra) };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["Content-Type"] = type || "application/json";
  }
  if (accept) init.headers.Accept = accept;
  const response = await fetch(path, init);
  if (response.status === 401) {
    await askToken();
    return api(path, { method, body, type, accept, extra });
  }
  if (!response.ok) {
    let problem = { title: response.statusText };
    try { problem = await response.json(); } catch { /* not a problem body */ }
    throw new ApiError(response.status, problem);
  }
  if (response.status === 204) return null;
  return accept && !accept.includes("json") ? response.text() : response.json();
}

let tokenWaiters = null;
function askToken() {
  if (tokenWaiters) return tokenWaiters;
  const dialog = document.getElementById("token-dialog");
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  tokenWaiters = new Promise((resolve) => {
    form.onsubmit = (event) => {
      event.preventDefault();
      state.token = input.value.trim();
      sessionStorage.setItem("aster-token", state.token);
      dialog.close();
      tokenWaiters = null;
      resolve();
    };
  });
  if (!dialog.open) dialog.showModal();
  input.focus();
  return tokenWaiters;
}

// Server-Sent Events over fetch (so the token can be sent), resumed with Last-Event-ID.
async function follow(path, { lastId, onEvent, signal, onState = () => {} }) {
  while (!signal.aborted) {
    try {
      const extra = { Accept: "text/event-stream" };
      if (lastId) extra["Last-Event-ID"] = lastId;
      const response = await fetch(path, { headers: headers(extra), signal });
      if (response.status === 401) { await askToken(); continue; }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      onState(true);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const chunk = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = {};
          for (const line of chunk.split("\n")) {
            if (!line || line.startsWith(":")) continue;
            const at = line.indexOf(":");
            const key = at < 0 ? line : line.slice(0, at);
            fields[key] = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
          }
          if (fields.data === undefined) continue;
          if (fields.id) lastId = fields.id;
          onEvent(fields.event || "message", JSON.parse(fields.data), fields.id);
        }
      }
    } catch (error) {
      if (signal.aborted) return;
    }
    onState(false);
    await sleep(1000);
  }
}

// The change feed, shared by every view: journal entries and append notices.
const feed = new AbortController();
function startFeed() {
  follow("/v1/events", {
    signal: feed.signal,
    onState: (up) => {
      liveBadge.textContent = up ? "live" : "reconnecting…";
      liveBadge.classList.toggle("on", up);
    },
    onEvent: (kind, data) => { for (const listener of feedListeners) listener(kind, data); },
  });
}

// -- rendering of transcripts -------------------------------------------------------------

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? `[${part.type}]`).join("\n");
  return "";
}

function prettyArguments(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return String(text ?? ""); }
}

function renderEvent(event, sessionId) {
  const seq = event.seq;
  const id = `turn-${seq}`;
  if (event.type === "summary") {
    return el("article", { class: "turn summary", id, tabindex: "-1" },
      el("h3", { text: `#${seq} summary of everything through #${event.through_seq}` }),
      el("p", { class: "content", text: event.content }));
  }
  if (event.type === "eviction") {
    const target = event.tool_call_id || `#${event.target_seq}`;
    return el("article", { class: "turn eviction", id, tabindex: "-1" },
      el("h3", { text: `#${seq} evicted ${target} from the context` }),
      event.stub ? el("p", { class: "content muted", text: event.stub }) : null);
  }
  if (event.type === "title") {
    return el("article", { class: "turn title", id, tabindex: "-1" },
      el("h3", { text: `#${seq} title (${event.source || "user"}): ${event.title}` }));
  }
  const role = event.role || "?";
  const body = el("article", { class: `turn ${role}`, id, tabindex: "-1" },
    el("h3", { text: `#${seq} ${role}${event.name ? ` (${event.name})` : ""} · ${when(event.ts)}` }));
  const content = event.content;
  if (content && typeof content === "object" && !Array.isArray(content) && content.content_ref) {
    const button = el("button", { class: "plain load-blob", text: `Load ${content.bytes} bytes` });
    const preview = el("p", { class: "content", text: `${content.preview || ""}…` });
    button.addEventListener("click", async () => {
      const page = await api(`/v1/sessions/${sessionId}/events?${q({ after: seq - 1, limit: 1 })}`);
      preview.textContent = textOf(page.events[0].content);
      button.remove();
    });
    body.append(preview, button);
  } else if (role === "tool") {
    const text = textOf(content);
    const head = el("span", { class: "muted", text: `result of ${event.tool_call_id}` });
    if (text.length > 600) {
      body.append(head, el("details", { class: "tool-result" },
        el("summary", { text: `${text.slice(0, 200)}… (${text.length} characters)` }),
        el("pre", { class: "content", text })));
    } else {
      body.append(head, el("pre", { class: "content tool-result", text }));
    }
  } else if (textOf(content)) {
    body.append(el("p", { class: "content", text: textOf(content) }));
  }
  for (const call of event.tool_calls || []) {
    const fn = call.function || {};
    body.append(el("div", { class: "tool-call" },
      el("strong", { text: `⚙ ${fn.name}` }), el("span", { class: "muted", text: ` ${call.id}` }),
      el("pre", { class: "args", text: prettyArguments(fn.arguments) })));
  }
  return body;
}

// -- views -------------------------------------------------------------------------------

async function projectsView(signal) {
  const box = el("section", {}, el("h2", { text: "Projects" }));
  main.replaceChildren(box);
  const table = el("table", {}, el("thead", {}, el("tr", {},
    el("th", { text: "Project" }), el("th", { text: "Sessions" }), el("th", { text: "Events" }),
    el("th", { text: "Last activity" }))), el("tbody"));
  box.append(table);
  const draw = async () => {
    const projects = await api("/v1/projects");
    table.tBodies[0].replaceChildren(...projects.items.map((p) => el("tr", {},
      el("td", {}, el("a", { href: `#/project?${q({ repo_root: p.repo_root })}`, text: p.repo_root })),
      el("td", { text: p.sessions }), el("td", { text: p.events }),
      el("td", { text: when(p.last_activity) }))));
    if (!projects.items.length) table.tBodies[0].append(el("tr", {}, el("td", { colspan: 4, text: "No sessions yet." })));
  };
  await draw();
  const redraw = throttle(draw, 500);
  const listener = (kind, data) => { if (kind === "session.appended" || String(data.op || "").startsWith("session.")) redraw(); };
  feedListeners.add(listener);
  signal.addEventListener("abort", () => feedListeners.delete(listener));
}

async function projectView(signal, params) {
  const repoRoot = params.get("repo_root");
  const heading = el("h2", { text: repoRoot });
  const search = el("form", { class: "toolbar", role: "search" },
    el("label", { for: "project-search", text: "Search this project" }),
    el("input", { id: "project-search", type: "search", name: "q" }),
    el("button", { type: "submit", text: "Search" }),
    el("a", { href: `#/memory?${q({ repo_root: repoRoot })}`, text: "Its memory" }));
  search.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/search?${q({ q: search.q.value, repo_root: repoRoot })}`;
  });
  const body = el("tbody");
  const table = el("table", {}, el("thead", {}, el("tr", {},
    el("th", { text: "Session" }), el("th", { text: "Created" }), el("th", { text: "Updated" }),
    el("th", { text: "Events" }), el("th", { text: "State" }))), body);
  const more = el("button", { class: "plain", text: "More sessions", hidden: true });
  main.replaceChildren(el("section", {}, heading, search, table, more));
  let cursor = null;
  const row = (s) => el("tr", { "data-id": s.id },
    el("td", {}, el("a", { href: `#/session/${s.id}`, text: s.title || "(untitled)" }), el("div", { class: "muted", text: s.id })),
    el("td", { text: when(s.created_at) }), el("td", { text: when(s.updated_at) }),
    el("td", { text: s.events }), el("td", { class: `state-${s.state}`, text: s.state }));
  const load = async (reset) => {
    const page = await api(`/v1/sessions?${q({ repo_root: repoRoot, limit: 50, cursor: reset ? null : cursor })}`);
    if (reset) body.replaceChildren();
    body.append(...page.items.map(row));
    cursor = page.next_cursor;
    more.hidden = !cursor;
  };
  more.addEventListener("click", () => load(false));
  await load(true);
  const redraw = throttle(() => load(true), 500);
  const listener = (kind, data) => {
    if (kind === "session.appended" || String(data.op || "").startsWith("session.")) redraw();
  };
  feedListeners.add(listener);
  signal.addEventListener("abort", () => feedListeners.delete(listener));
}

async function sessionView(signal, params, id) {
  let detail;
  try {
    detail = await api(`/v1/sessions/${id}`);
  } catch (error) {
    if (error.status !== 404) throw error;
    const restore = el("button", { text: "Restore from the trash" });
    restore.addEventListener("click", async () => {
      try { await api(`/v1/sessions/${id}/restore`, { method: "POST" }); route(); } catch (e) { say(e.message); }
    });
    main.replaceChildren(el("section", {}, el("h2", { text: "Session not found" }),
      el("p", { text: `No live session ${id}. If it was deleted, it may be in the trash.` }), restore));
    return;
  }
  const title = el("h2", { id: "session-title", text: detail.title || "(untitled)" });
  const meta = el("p", { class: "muted" });
  const drawMeta = () => {
    meta.textContent = `${detail.repo_root} · ${detail.events} events · ${when(detail.created_at)} → ${when(detail.updated_at)} · `;
    meta.append(el("span", { class: `state-${detail.state}`, text: detail.state }));
  };
  drawMeta();
  const rename = el("form", { class: "toolbar" },
    el("label", { for: "rename-input", text: "Title" }),
    el("input", { id: "rename-input", name: "title", value: detail.title || "" }),
    el("button", { type: "submit", text: "Rename" }));
  rename.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      detail = { ...detail, ...(await api(`/v1/sessions/${id}`, { method: "PATCH", body: { title: rename.title.value } })) };
      title.textContent = detail.title;
      say("Renamed.", true);
    } catch (error) { say(error.message); }
  });
  const remove = el("button", { class: "danger", text: "Delete" });
  remove.addEventListener("click", async () => {
    if (!confirm("Move this session to the trash?")) return;
    try { await api(`/v1/sessions/${id}`, { method: "DELETE" }); say("Moved to the trash.", true); route(); } catch (error) { say(error.message); }
  });
  const list = el("div", { id: "events", "aria-live": "polite" });
  main.replaceChildren(el("section", {}, title, meta,
    el("div", { class: "toolbar" }, rename, remove,
      el("a", { href: `#/project?${q({ repo_root: detail.repo_root })}`, text: "All sessions of this project" })),
    list));
  const started = performance.now();
  let last = 0;
  let after = 0;
  for (;;) {
    const page = await api(`/v1/sessions/${id}/events?${q({ after, limit: 2000, inline: false })}`);
    const fragment = document.createDocumentFragment();
    for (const event of page.events) {
      fragment.append(renderEvent(event, id));
      last = Math.max(last, event.seq);
    }
    list.append(fragment);
    if (!page.next_cursor) break;
    after = Number(page.next_cursor);
  }
  await new Promise((resolve) => requestAnimationFrame(() => resolve()));
  document.body.dataset.renderMs = String(Math.round(performance.now() - started));
  const target = params.get("seq");
  if (target) {
    const turn = document.getElementById(`turn-${target}`);
    if (turn) { turn.classList.add("target"); turn.scrollIntoView({ block: "center" }); turn.focus(); }
  }
  follow(`/v1/sessions/${id}/events/stream`, {
    lastId: String(last),
    signal,
    onEvent: (kind, event) => {
      if (kind !== "event" || event.seq <= last) return;
      last = event.seq;
      list.append(renderEvent(event, id));
      detail.events += 1;
      if (event.type === "title") { detail.title = event.title; title.textContent = event.title; }
      drawMeta();
    },
  });
}

async function scopes() {
  const projects = await api("/v1/projects");
  return [{ label: "Global", repo_root: "" }, ...projects.items.map((p) => ({ label: p.repo_root, repo_root: p.repo_root }))];
}

function conflictBox(message, newer, onUse) {
  const use = el("button", { text: "Load the newer version" });
  const box = el("div", { class: "conflict", role: "alert" },
    el("strong", { text: "Conflict: " }), message,
    el("pre", { class: "content", text: newer }), use);
  use.addEventListener("click", () => { onUse(); box.remove(); });
  return box;
}

async function memoryView(signal, params) {
  const repoRoot = params.get("repo_root") || "";
  const scopeParam = repoRoot ? { repo_root: repoRoot } : {};
  const picker = el("select", { id: "scope-picker" });
  for (const scope of await scopes()) {
    picker.append(el("option", { value: scope.repo_root, selected: scope.repo_root === repoRoot, text: scope.label }));
  }
  picker.addEventListener("change", () => { location.hash = `#/memory?${q({ repo_root: picker.value })}`; });

  const coreArea = el("textarea", { id: "core-editor", "aria-label": "Core memory (ASTER.md)" });
  const coreSave = el("button", { text: "Save ASTER.md" });
  const coreBox = el("section", {}, el("h3", { text: "Core memory (ASTER.md)" }), coreArea, el("div", { class: "toolbar" }, coreSave));
  let coreEtag = null;
  const loadCore = async () => {
    const core = await api(`/v1/memory/core?${q(scopeParam)}`);
    coreArea.value = core.content;
    coreEtag = core.etag;
  };
  coreSave.addEventListener("click", async () => {
    try {
      const done = await api(`/v1/memory/core?${q(scopeParam)}`, { method: "PUT", body: { content: coreArea.value }, extra: { "If-Match": coreEtag } });
      coreEtag = done.etag;
      say("Saved ASTER.md.", true);
    } catch (error) {
      if (error.status !== 412) return say(error.message);
      const newer = await api(`/v1/memory/core?${q(scopeParam)}`);
      coreBox.append(conflictBox("ASTER.md changed since you opened it. Your text is still in the editor.", newer.content,
        () => { coreArea.value = newer.content; coreEtag = newer.etag; }));
    }
  });

  const blocksBox = el("section", { id: "blocks" }, el("h3", { text: "Blocks" }));
  const contextBox = el("pre", { id: "memory-context", class: "content" });
  main.replaceChildren(el("section", {}, el("h2", { text: "Memory" }),
    el("div", { class: "toolbar" }, el("label", { for: "scope-picker", text: "Scope" }), picker),
    el("div", { class: "grid" },
      el("div", {}, coreBox, blocksBox),
      el("section", {}, el("h3", { text: "The context an agent gets" }), contextBox))));

  const editing = new Set();
  const drawBlock = (block) => {
    const box = el("article", { class: `block${block.archived ? " archived" : ""}`, id: `block-${block.name}` },
      el("h4", { text: block.name }),
      el("p", { text: block.description }),
      el("p", { class: "muted", text: `${block.type} · importance ${block.importance} · ${block.tags.join(", ")}${block.pinned ? " · pinned" : ""}${block.archived ? " · archived" : ""} · ${when(block.updated_at)}` }));
    const tools = el("div", { class: "toolbar" });
    const button = (text, action, cls) => {
      const b = el("button", { class: cls || "plain", text });
      b.addEventListener("click", async () => { try { await action(); } catch (error) { say(error.message); } });
      tools.append(b);
    };
    const path = `/v1/memory/blocks/${encodeURIComponent(block.name)}`;
    if (!block.archived) {
      button("Edit", async () => {
        const read = await api(`${path}?${q({ ...scopeParam, track: false })}`);
        let etag = read.etag;
        const area = el("textarea", { class: "block-editor", "aria-label": `Edit ${block.name}` });
        area.value = read.content;
        const save = el("button", { text: "Save block" });
        const form = el("div", {}, area, el("div", { class: "toolbar" }, save));
        editing.add(block.name);
        save.addEventListener("click", async () => {
          try {
            await api(`${path}?${q(scopeParam)}`, { method: "PUT", body: area.value, type: "text/markdown", extra: { "If-Match": etag } });
            editing.delete(block.name);
            say(`Saved ${block.name}.`, true);
            refresh();
          } catch (error) {
            if (error.status !== 412) return say(error.message);
            const newer = await api(`${path}?${q({ ...scopeParam, track: false })}`);
            form.append(conflictBox(`${block.name} changed since you opened it. Your text is still in the editor.`, newer.content,
              () => { area.value = newer.content; etag = newer.etag; }));
          }
        });
        box.append(form);
        area.focus();
      });
      button("Archive", () => api(`${path}/archive?${q(scopeParam)}`, { method: "POST" }).then(refresh));
      button("Forget", async () => {
        if (!confirm(`Forget ${block.name}? The journal keeps it, so it can be reverted.`)) return;
        await api(`${path}?${q(scopeParam)}`, { method: "DELETE" });
        refresh();
      }, "danger");
    } else {
      button("Restore", () => api(`${path}/restore?${q(scopeParam)}`, { method: "POST" }).then(refresh));
    }
    button("History", async () => {
      const entries = await api(`/v1/journal?${q({ name: block.name, scope: block.scope, limit: 200 })}`);
      box.append(journalList(entries.items));
    });
    box.append(tools);
    return box;
  };
  const refresh = async () => {
    const [blocks, context] = await Promise.all([
      api(`/v1/memory/blocks?${q({ ...scopeParam, include_archived: true })}`),
      api(`/v1/memory/context?${q(scopeParam)}`),
    ]);
    contextBox.textContent = context.content;
    const open = [...editing];
    blocksBox.replaceChildren(el("h3", { text: "Blocks" }),
      ...blocks.items.filter((b) => !open.includes(b.name)).map(drawBlock),
      ...[...blocksBox.querySelectorAll(".block")].filter((b) => open.includes(b.id.slice(6))));
    if (!blocks.items.length) blocksBox.append(el("p", { class: "muted", text: "No blocks in this scope." }));
  };
  await Promise.all([loadCore(), refresh()]);
  const redraw = throttle(refresh, 300);
  const listener = (kind, data) => { if (String(data.op || "").startsWith("memory.") && data.op !== "memory.recall") redraw(); };
  feedListeners.add(listener);
  signal.addEventListener("abort", () => feedListeners.delete(listener));
}

function describeEntry(entry) {
  const detail = entry.detail || {};
  let extra = "";
  if (detail.first_seq !== undefined) extra = ` seq ${detail.first_seq}-${detail.last_seq}`;
  else if (detail.title) extra = ` "${detail.title}"`;
  else if (detail.reason) extra = ` (${detail.reason})`;
  return `${when(entry.ts)} · ${entry.op} · ${entry.scope} · ${entry.name || entry.session || ""}${extra} · ${entry.actor}`;
}

function journalList(entries) {
  const list = el("ol", { class: "journal" });
  for (const entry of entries) list.append(journalItem(entry));
  return list;
}

function journalItem(entry) {
  const item = el("li", { "data-op": entry.op, "data-id": entry.id }, el("span", { text: describeEntry(entry) }));
  if (REVERTIBLE.test(entry.op)) {
    const revert = el("button", { class: "plain", text: "Revert" });
    revert.addEventListener("click", async () => {
      try { await api(`/v1/journal/${entry.id}/revert`, { method: "POST" }); say(`Reverted ${entry.op}.`, true); } catch (error) { say(error.message); }
    });
    item.append(" ", revert);
  }
  return item;
}

async function journalView(signal, params) {
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
  const listener = (kind, entry) => { if (kind === "journal" && matches(entry)) list.prepend(journalItem(entry)); };
  feedListeners.add(listener);
  signal.addEventListener("abort", () => feedListeners.delete(listener));
}

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

async function searchView(signal, params) {
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

// -- routing -----------------------------------------------------------------------------

let current = null;
async function route() {
  if (current) current.abort();
  current = new AbortController();
  say("");
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(query || "");
  try {
    if (path.startsWith("/session/")) await sessionView(current.signal, params, decodeURIComponent(path.slice(9)));
    else if (path === "/project") await projectView(current.signal, params);
    else if (path === "/memory") await memoryView(current.signal, params);
    else if (path === "/journal") await journalView(current.signal, params);
    else if (path === "/search") await searchView(current.signal, params);
    else await projectsView(current.signal);
  } catch (error) {
    say(error.message);
  }
  document.body.dataset.view = path;
  document.body.dataset.ready = "true";
}

document.getElementById("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  location.hash = `#/search?${q({ q: event.target.q.value })}`;
});
window.addEventListener("hashchange", () => { document.body.dataset.ready = "false"; route(); });
startFeed();
route();
