// The memory view (#/memory?repo_root=…): one scope's ASTER.md and blocks, edited with
// If-Match (a 412 shows the newer version, the text kept), and the context an agent gets.

import { api } from "./api.js";
import { el, main, q, say, throttle, when } from "./dom.js";
import { journalList } from "./journal.js";
import { subscribe } from "./live.js";

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

export async function memoryView(signal, params) {
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
  subscribe((kind, data) => { if (String(data.op || "").startsWith("memory.") && data.op !== "memory.recall") redraw(); }, signal);
}
