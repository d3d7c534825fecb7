// The gateway token of every page: taken once from `#token=` (then cut from the
// address bar, so it is not left in history) and kept in localStorage.

/** The stored gateway token, or null when the owner has not given one yet. */
export function token() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const fromHash = hash.get("token");
  if (fromHash) {
    localStorage.setItem("hub.token", fromHash);
    history.replaceState(null, "", location.pathname);
  }
  return localStorage.getItem("hub.token");
}
