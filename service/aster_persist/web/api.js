// The daemon's API from the page: every request goes to the page's own origin with the
// token and says it comes from the dashboard (the journal shows it so); a 401 asks for
// the token and retries; any other failure throws an ApiError with a plain message.

import { askToken, token } from "./token.js";

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export const UNREACHABLE = "The daemon is not answering (stopped, or restarting). This view reloads itself once it is back.";

export function headers(extra = {}) {
  const out = { "X-Aster-Actor": "dashboard", ...extra };
  if (token()) out.Authorization = `Bearer ${token()}`;
  return out;
}

export async function api(path, { method = "GET", body, type, accept, extra = {}, refused = false } = {}) {
  const init = { method, headers: headers(extra) };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["Content-Type"] = type || "application/json";
  }
  if (accept) init.headers.Accept = accept;
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, { detail: UNREACHABLE });
  }
  if (response.status === 401) {
    await askToken(refused || Boolean(token()));
    return api(path, { method, body, type, accept, extra, refused: true });
  }
  if (!response.ok) {
    let problem = { title: response.statusText };
    try { problem = await response.json(); } catch { /* not a problem body */ }
    throw new ApiError(response.status, problem);
  }
  if (response.status === 204) return null;
  const answer = accept && !accept.includes("json") ? await response.text() : await response.json();
  if (answer && typeof answer === "object") Object.defineProperty(answer, "etag", { value: response.headers.get("ETag"), enumerable: false });
  return answer;
}
