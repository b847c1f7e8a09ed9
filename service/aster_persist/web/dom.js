// Building the page: elements from plain values (text is only ever set as text, never
// parsed as HTML), the notice line, query strings, numbers, times and throttled redraws.

export const main = document.getElementById("main");
const notice = document.getElementById("notice");

export function el(tag, attrs = {}, ...children) {
  const node = tag === "svg" || attrs.svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false || key === "svg") continue;
    if (key === "class") node.setAttribute("class", value);
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

export const q = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "")).toString();

export function say(message, ok = false) {
  notice.textContent = message;
  notice.className = ok ? "ok" : "";
  notice.hidden = !message;
}

export function when(ts) {
  if (!ts) return "";
  const date = new Date(ts);
  return isNaN(date) ? ts : date.toLocaleString();
}

// "3 min ago", "2 days ago": how long since a time, for lists.
export function ago(ts) {
  const then = new Date(ts).getTime();
  if (!ts || isNaN(then)) return "";
  const s = Math.max(0, (Date.now() - then) / 1000);
  if (s < 60) return "just now";
  for (const [size, unit] of [[86400 * 365, "year"], [86400 * 30, "month"], [86400, "day"], [3600, "hour"], [60, "min"]]) {
    if (s >= size) { const n = Math.floor(s / size); return `${n} ${unit}${n > 1 && unit !== "min" ? "s" : ""} ago`; }
  }
  return "";
}

export function duration(ms) {
  if (!ms) return "0 s";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function count(n) {
  if (n === undefined || n === null) return "";
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${Math.round(n / 1e3)}k`;
  return String(n);
}

export function size(chars) {
  return chars >= 1024 ? `${(chars / 1024).toFixed(1)}k characters` : `${chars} characters`;
}

export const tokens = (chars) => Math.ceil(chars / 4);

export function throttle(fn, ms) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; fn(); }, ms);
  };
}

// The view's title: the tab's title and the heading that gets the focus.
export function titled(text) {
  document.title = `${text} · aster-persist`;
  return el("h2", { id: "view-title", tabindex: "-1", text });
}

// A project as lists show it: its folder's name (global memory has none).
export const projectName = (root) => root ? root.split("/").filter(Boolean).pop() || root : "global";

// A table that scrolls sideways within itself rather than the page (phones).
export const wrap = (table) => el("div", { class: "table-wrap" }, table);

// The header's Memory link leads to the memory of the project in view (global elsewhere).
export function inProject(repoRoot) {
  const link = document.getElementById("nav-memory");
  link.href = repoRoot ? `#/memory?${q({ repo_root: repoRoot })}` : "#/memory";
  link.textContent = repoRoot ? "Project memory" : "Memory";
}

// The address's parameters as they are now (a change made a moment ago included, even if
// its view is not drawn yet), with `changes` over them.
export function amended(changes) {
  const now = Object.fromEntries(new URLSearchParams(location.hash.split("?")[1] || ""));
  return q({ ...now, ...changes });
}

// Go to another view: not ready from this moment on (the hash change is told later).
export function navigate(hash) {
  if (hash === location.hash) return;
  document.body.dataset.ready = "false";
  location.hash = hash;
}
