// The session view (#/session/<id>?seq=…): the whole transcript, then its live appends;
// rename, delete to the trash, and restore from it. body[data-render-ms] reports the draw.

import { api } from "./api.js";
import { el, main, q, say, when } from "./dom.js";
import { follow } from "./live.js";
import { route } from "./router.js";
import { markRetracted, renderEvent } from "./transcript.js";

export async function sessionView(signal, params, id) {
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
    markRetracted(list, page.events);
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
      markRetracted(list, [event]);
      detail.events += 1;
      if (event.type === "title") { detail.title = event.title; title.textContent = event.title; }
      drawMeta();
    },
  });
}
