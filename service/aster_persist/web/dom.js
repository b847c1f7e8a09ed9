// Building the page: elements from plain values (text is only ever set as text, never
// parsed as HTML), the notice line, query strings, dates and throttled redraws.

export const main = document.getElementById("main");
const notice = document.getElementById("notice");

export function el(tag, attrs = {}, ...children) {
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

export function throttle(fn, ms) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; fn(); }, ms);
  };
}
