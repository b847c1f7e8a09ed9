// The daemon's API from the page: every request goes to the page's own origin with the
// token; a 401 asks for the token and retries, any other failure throws its problem+json.

import { askToken, token } from "./token.js";

class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export function headers(extra = {}) {
  const out = { ...extra };
  if (token()) out.Authorization = `Bearer ${token()}`;
  return out;
}

export async function api(path, { method = "GET", body, type, accept, extra = {} } = {}) {
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
