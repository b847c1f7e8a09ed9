// The bearer token: kept for this tab only (sessionStorage), asked for with the token
// dialog; requests that meet a 401 at the same time share one dialog. A token the
// daemon refused is said so; Escape or Cancel gives up (the requests fail, plainly).

let current = sessionStorage.getItem("aster-token");
let waiting = null;

export const token = () => current;

export function askToken(refused = false) {
  const dialog = document.getElementById("token-dialog");
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  const error = document.getElementById("token-error");
  error.hidden = !refused;
  error.textContent = refused ? "The daemon refused that token. Check it and try again." : "";
  if (waiting) return waiting.promise;
  waiting = {};
  waiting.promise = new Promise((resolve, reject) => { waiting.resolve = resolve; waiting.reject = reject; });
  const done = (ok) => {
    const w = waiting;
    waiting = null;
    if (dialog.open) dialog.close();
    if (ok) w.resolve(); else w.reject(Object.assign(new Error("No token was given, so the daemon cannot be read. Reload the page to enter it."), { status: 401 }));
  };
  form.onsubmit = (event) => {
    event.preventDefault();
    current = input.value.trim();
    sessionStorage.setItem("aster-token", current);
    input.value = "";
    done(true);
  };
  document.getElementById("token-cancel").onclick = () => done(false);
  dialog.oncancel = (event) => { event.preventDefault(); done(false); };  // Escape
  if (!dialog.open) dialog.showModal();
  input.focus();
  return waiting.promise;
}
