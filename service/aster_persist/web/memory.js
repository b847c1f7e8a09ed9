// The memory view (#/memory?repo_root=…&block=…): one scope's ASTER.md and its blocks,
// bodies shown; a block edited through fields that refuse what the daemon would refuse
// (saved with PATCH and If-Match, so keys of its own stay); a newer version met on save
// shown as a diff, to keep yours, take theirs or merge; each block's history as diffs;
// a new block added through the same fields; and the context an agent gets, in its
// labelled parts with their sizes.

import { api } from "./api.js";
import { el, main, navigate, q, say, size, throttle, titled, when } from "./dom.js";
import { journalItem } from "./journal.js";
import { subscribe } from "./live.js";
import { conflictBox } from "./revisions.js";
import { folded } from "./transcript.js";

async function scopes() {
  const projects = await api("/v1/projects");
  return [{ label: "Global", repo_root: "" }, ...projects.items.map((p) => ({ label: p.repo_root, repo_root: p.repo_root }))];
}

function contextView(context) {
  const parts = context.parts.map((part) => el("section", { class: "context-part", "data-scope": part.scope },
    el("h4", {}, part.label, el("span", { class: "muted", text: ` · ${size(part.chars)} · about ${part.tokens} tokens` })),
    el("pre", { class: "content", text: part.content })));
  return el("div", { id: "memory-context" },
    el("p", { class: "muted", text: `In all: ${size(context.content.length)}, about ${context.tokens} tokens; ${context.counts.shown} of ${context.counts.blocks} blocks listed.` }),
    ...(parts.length ? parts : [el("p", { class: "muted", text: "Nothing yet: an agent gets no memory in its prompt." })]));
}

function fieldsForm(read, onSave) {
  const m = read.metadata || {};
  const field = (label, input) => el("label", { class: "field" }, el("span", { text: label }), input);
  const form = el("form", { class: "block-form", novalidate: false },
    field("Description", el("input", { name: "description", maxlength: 500, value: read.description || "" })),
    field("Type", el("select", { name: "type" }, ["semantic", "procedural"].map((t) => el("option", { value: t, selected: read.type === t, text: t })))),
    field("Tags (comma separated)", el("input", { name: "tags", value: (read.tags || []).join(", ") })),
    field("Importance (0 to 1)", el("input", { name: "importance", type: "number", min: 0, max: 1, step: "any", required: true, value: read.importance })),
    field("Confidence (0 to 1)", el("input", { name: "confidence", type: "number", min: 0, max: 1, step: "any", required: true, value: read.confidence ?? m.confidence ?? 0.5 })),
    el("label", { class: "check" }, el("input", { name: "pinned", type: "checkbox", checked: Boolean(read.pinned) }), " Pinned (always kept)"),
    field("Body", el("textarea", { name: "body", class: "block-editor", required: true })),
    el("p", { class: "form-error bad", role: "alert", hidden: true }),
    el("div", { class: "toolbar" }, el("button", { type: "submit", text: "Save block" }), el("button", { type: "button", class: "plain cancel", text: "Cancel" })));
  form.body.value = read.body ?? "";
  form.values = () => ({
    description: form.description.value.trim(),
    type: form.type.value,
    tags: form.tags.value.split(",").map((t) => t.trim()).filter(Boolean),
    importance: Number(form.importance.value),
    confidence: Number(form.confidence.value),
    pinned: form.pinned.checked,
    body: form.body.value,
  });
  form.load = (other) => {
    form.description.value = other.description || "";
    form.type.value = other.type;
    form.tags.value = (other.tags || []).join(", ");
    form.importance.value = other.importance;
    form.confidence.value = other.confidence;
    form.pinned.checked = Boolean(other.pinned);
    form.body.value = other.body;
  };
  form.addEventListener("submit", (event) => { event.preventDefault(); if (form.reportValidity()) onSave(form.values()); });
  return form;
}

export async function memoryView(signal, params) {
  const repoRoot = params.get("repo_root") || "";
  const scopeParam = repoRoot ? { repo_root: repoRoot } : {};
  const heading = titled(repoRoot ? `Memory of ${repoRoot}` : "Global memory");
  const picker = el("select", { id: "scope-picker" });
  const known = await scopes();
  if (signal.aborted) return;
  for (const scope of known) picker.append(el("option", { value: scope.repo_root, selected: scope.repo_root === repoRoot, text: scope.label }));
  picker.addEventListener("change", () => { navigate(`#/memory?${q({ repo_root: picker.value })}`); });

  const coreArea = el("textarea", { id: "core-editor", "aria-label": "Core memory (ASTER.md)" });
  const coreSave = el("button", { text: "Save ASTER.md" });
  const coreBox = el("section", {}, el("h3", { text: "Core memory (ASTER.md)" }), coreArea, el("div", { class: "toolbar" }, coreSave));
  let coreEtag = null;
  const loadCore = async () => { const core = await api(`/v1/memory/core?${q(scopeParam)}`); coreArea.value = core.content; coreEtag = core.etag; };
  const saveCore = async () => {
    try {
      const done = await api(`/v1/memory/core?${q(scopeParam)}`, { method: "PUT", body: { content: coreArea.value }, extra: { "If-Match": coreEtag } });
      coreEtag = done.etag;
      say("Saved ASTER.md.", true);
    } catch (error) {
      if (error.status !== 412) return say(error.message);
      const newer = await api(`/v1/memory/core?${q(scopeParam)}`);
      const mine = coreArea.value;
      coreBox.append(conflictBox("ASTER.md", mine, newer.content, {
        keepMine: () => { coreEtag = newer.etag; saveCore(); },
        takeTheirs: () => { coreArea.value = newer.content; coreEtag = newer.etag; },
        merge: (text) => { coreArea.value = text; coreEtag = newer.etag; coreArea.focus(); },
      }));
    }
  };
  coreSave.addEventListener("click", saveCore);

  const blocksBox = el("section", { id: "blocks" }, el("h3", { text: "Blocks" }));
  const addBox = el("div", { id: "new-block" });
  const addButton = el("button", { type: "button", class: "plain", text: "New block", onclick: () => openNew() });
  // A new block through the same fields (and a name, or none: the daemon makes one from
  // its start); a name taken is refused where you typed it, nothing written.
  const openNew = () => {
    if (addBox.firstChild) { addBox.querySelector("input")?.focus(); return; }
    const form = fieldsForm({ type: "semantic", importance: 0.5, confidence: 0.5, body: "" }, async (values) => {
      const error = form.querySelector(".form-error");
      error.hidden = true;
      const { body, description, ...keys } = values;
      const name = form.elements.name.value.trim();
      const sent = { ...keys, content: body };
      if (name) sent.name = name;
      if (description) sent.description = description;
      try {
        const made = await api(`/v1/memory/blocks?${q(scopeParam)}`, { method: "POST", body: sent });
        addBox.replaceChildren();
        say(`Added ${made.name}.`, true);
        await refresh();
        document.getElementById(`block-${made.name}`)?.scrollIntoView({ block: "center" });
      } catch (failure) { error.textContent = failure.message; error.hidden = false; }
    });
    form.prepend(el("label", { class: "field" }, el("span", { text: "Name (lowercase letters, digits and -; left empty, made from the body)" }),
      el("input", { name: "name", maxlength: 64, pattern: "[a-z0-9][a-z0-9\\-]{0,63}", autocomplete: "off" })));
    form.querySelector("button[type=submit]").textContent = "Add block";
    form.querySelector(".cancel").addEventListener("click", () => addBox.replaceChildren());
    addBox.replaceChildren(form);
    form.elements.name.focus();
  };
  const contextBox = el("div", { id: "context-box" });
  main.replaceChildren(el("section", {}, heading,
    el("div", { class: "toolbar" }, el("label", { for: "scope-picker", text: "Scope" }), picker),
    el("div", { class: "grid" },
      el("div", {}, coreBox, el("div", { class: "toolbar" }, addButton), addBox, blocksBox),
      el("section", {}, el("h3", { text: "The context an agent gets" }), contextBox))));

  const editing = new Set();  // blocks with an editor open
  const kept = new Set();  // blocks with their history open
  let viewScope = repoRoot ? null : "global";
  const drawBlock = (block) => {
    const relations = [
      block.supersedes?.length ? `replaces ${block.supersedes.join(", ")}` : "",
      block.conflicts_with?.length ? `conflicts with ${block.conflicts_with.join(", ")}` : "",
    ].filter(Boolean).join(" · ");
    const body = el("div", { class: "block-body" });
    const box = el("article", { class: `block${block.archived ? " archived" : ""}`, id: `block-${block.name}` },
      el("h4", {}, block.name, block.pinned ? el("span", { class: "badge", text: "pinned" }) : null,
        block.archived ? el("span", { class: "badge muted", text: "archived" }) : null),
      el("p", { class: "description", text: block.description }),
      el("p", { class: "muted", text: `${block.type} · importance ${block.importance} · confidence ${block.confidence}${block.tags.length ? ` · ${block.tags.join(", ")}` : ""} · ${when(block.updated_at)}` }),
      relations ? el("p", { class: "relations", text: relations }) : null, body);
    const tools = el("div", { class: "toolbar" });
    const button = (text, action, cls) => tools.append(el("button", { type: "button", class: cls || "plain", text,
      onclick: async () => { try { await action(); } catch (error) { say(error.message); } } }));
    const path = `/v1/memory/blocks/${encodeURIComponent(block.name)}`;
    const read = () => api(`${path}?${q({ ...scopeParam, track: false, archived: block.archived || undefined })}`);
    box.etag = block.etag;
    box.archived = block.archived;
    read().then((r) => body.replaceChildren(folded("body", r.body, { cls: "content" }))).catch(() => {});
    if (!block.archived) {
      button("Edit", async () => {
        if (editing.has(block.name)) return;
        editing.add(block.name);  // at once: a redraw while the block is read keeps this box
        let first;
        try { first = await read(); } catch (failure) { editing.delete(block.name); throw failure; }
        let etag = first.etag;
        const done = () => { editing.delete(block.name); form.remove(); };
        const form = fieldsForm(first, async function save(values) {
          const error = form.querySelector(".form-error");
          error.hidden = true;
          try {
            await api(`${path}?${q(scopeParam)}`, { method: "PATCH", body: values, extra: { "If-Match": etag } });
            done();
            say(`Saved ${block.name}.`, true);
            refresh();
          } catch (failure) {
            if (failure.status !== 412) { error.textContent = failure.message; error.hidden = false; say(failure.message); return; }
            const newer = await read();
            form.append(conflictBox(block.name, values.body, newer.body, {
              keepMine: () => { etag = newer.etag; save(values); },
              takeTheirs: () => { form.load(newer); etag = newer.etag; },
              merge: (text) => { form.body.value = text; etag = newer.etag; form.body.focus(); },
            }));
          }
        });
        form.querySelector(".cancel").addEventListener("click", done);
        box.append(form);
        form.description.focus();
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
    box.history = async () => {  // shown until closed, drawn again after each change
      const entries = await api(`/v1/journal?${q({ name: block.name, scope: block.scope, order: "desc", limit: 100 })}`);
      const list = el("ol", { class: "journal" }, entries.items.filter((e) => e.op !== "memory.recall").map((e) => journalItem(e, { links: false })));
      const shown = box.querySelector("ol.journal");
      if (shown) shown.replaceWith(list); else box.append(list);
    };
    button("History", async () => {
      if (box.querySelector("ol.journal")) { box.querySelector("ol.journal").remove(); kept.delete(block.name); return; }
      kept.add(block.name);
      await box.history();
    });
    box.append(tools);
    return box;
  };
  const refresh = async () => {
    const [blocks, context] = await Promise.all([
      api(`/v1/memory/blocks?${q({ ...scopeParam, include_archived: true })}`),
      api(`/v1/memory/context?${q(scopeParam)}`),
    ]);
    contextBox.replaceChildren(contextView(context));
    viewScope = context.scope;
    // An open editor stays as it is; an open history stays until its block changes,
    // then the block is drawn again with its history open.
    const shown = (b) => blocksBox.querySelector(`#block-${CSS.escape(b.name)}`);
    const same = (box, b) => box && box.etag === b.etag && box.archived === b.archived;
    const boxes = blocks.items.map((b) => {
      if (editing.has(b.name) && shown(b)) return shown(b);
      if (kept.has(b.name) && same(shown(b), b)) return shown(b);
      const box = drawBlock(b);
      if (kept.has(b.name)) box.history();
      return box;
    });
    blocksBox.replaceChildren(el("h3", { text: "Blocks" }), ...boxes);
    if (!blocks.items.length) blocksBox.append(el("p", { class: "muted", text: "No blocks in this scope." }));
  };
  await Promise.all([loadCore(), refresh()]);
  const wanted = params.get("block");
  if (wanted) {
    const target = document.getElementById(`block-${wanted}`);
    if (target) { target.classList.add("target"); target.scrollIntoView({ block: "center" }); }
  }
  const redraw = throttle(refresh, 300);
  subscribe((kind, data) => {  // changes of this scope, or of global memory (in its context)
    if (String(data.op || "").startsWith("memory.") && data.op !== "memory.recall" && [viewScope, "global"].includes(data.scope)) redraw();
  }, signal);
}
