// The bearer token: kept for this tab only (sessionStorage), asked for with the token
// dialog; requests that meet a 401 at the same time share one dialog.

let current = sessionStorage.getItem("aster-token");
let tokenWaiters = null;

export const token = () => current;

export function askToken() {
  if (tokenWaiters) return tokenWaiters;
  const dialog = document.getElementById("token-dialog");
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  tokenWaiters = new Promise((resolve) => {
    form.onsubmit = (event) => {
      event.preventDefault();
      current = input.value.trim();
      sessionStorage.setItem("aster-token", current);
      dialog.close();
      tokenWaiters = null;
      resolve();
    };
  });
  if (!dialog.open) dialog.showModal();
  input.focus();
  return tokenWaiters;
}
