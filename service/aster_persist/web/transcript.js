// One transcript event as DOM: turns, tool calls and results, summaries, evictions,
// titles, the model's thinking and retractions; a large content kept as a blob shows its
// preview and loads on request. An event a retraction took back is struck through.

import { api } from "./api.js";
import { el, q, when } from "./dom.js";

export function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? `[${part.type}]`).join("\n");
  return "";
}

function prettyArguments(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return String(text ?? ""); }
}

export function renderEvent(event, sessionId) {
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
  if (event.type === "reasoning") {
    const text = textOf(event.content);
    return el("article", { class: "turn reasoning", id, tabindex: "-1" },
      el("details", {},
        el("summary", { text: `#${seq} thinking${text ? ` (${text.length} characters)` : " (not readable)"}` }),
        el("p", { class: "content muted", text })));
  }
  if (event.type === "retraction") {
    return el("article", { class: "turn retraction", id, tabindex: "-1" },
      el("h3", { text: `#${seq} took back #${event.target_seq}${event.reason ? `: ${event.reason}` : ""}` }));
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

// Strike through, under root, the turns the retractions among events took back.
export function markRetracted(root, events) {
  for (const event of events) {
    if (event.type !== "retraction") continue;
    const target = root.querySelector(`#turn-${event.target_seq}`);
    if (target) { target.classList.add("retracted"); target.title = `Taken back by #${event.seq}`; }
  }
}
