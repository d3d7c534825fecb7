// Shared by the operator's pages (control.html, queues.html): the gateway token
// (from #token=, kept in localStorage), the JSON API, and tables built from DOM
// nodes and text only, never innerHTML: names and messages come from strangers.
import { token } from "./token.js";
export const $ = (id) => document.getElementById(id);
const REFRESH_MS = 3000;
let refresh = async () => {};

export async function api(path, body) {
  const res = await fetch(`/api/control/${path}`, {
    method: body ? "POST" : "GET",
    headers: { authorization: `Bearer ${token()}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = await res.json();
  if (!res.ok) throw Object.assign(new Error(json.error ?? `HTTP ${res.status}`), { status: res.status });
  return json;
}

export function setStatus(state, text) {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

function cell(content) {
  const td = document.createElement("td");
  if (content instanceof Node) td.append(content);
  else td.textContent = content ?? "";
  return td;
}

export function button(label, action) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      await action();
    } catch (error) {
      setStatus("closed", error.message);
    }
    await refresh();
  });
  return b;
}

/** Fills a table: a header row and one row per item (or a line saying there is nothing). */
export function fill(table, headers, items, row) {
  const head = document.createElement("tr");
  for (const h of headers) head.append(Object.assign(document.createElement("th"), { textContent: h }));
  const rows = items.map((item) => {
    const tr = document.createElement("tr");
    tr.append(...row(item).map(cell));
    return tr;
  });
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = cell("none");
    td.colSpan = headers.length;
    tr.append(td);
    rows.push(tr);
  }
  table.replaceChildren(head, ...rows);
}

/**
 * Runs an operator page: asks for the token when there is none, then loads
 * (`load` reads the API) and renders every few seconds; buttons refresh too.
 */
export async function runPage(load, render) {
  refresh = async () => {
    if (!token()) {
      $("login").hidden = false;
      setStatus("closed", "token needed");
      return;
    }
    try {
      render(await load());
      $("login").hidden = true;
      setStatus("open", `updated ${new Date().toLocaleTimeString()}`);
    } catch (error) {
      setStatus("closed", error.message);
      if (error.status === 401) {
        localStorage.removeItem("hub.token");
        $("login").hidden = false;
      }
    }
  };
  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    localStorage.setItem("hub.token", $("token").value.trim());
    refresh();
  });
  await refresh();
  setInterval(refresh, REFRESH_MS);
}

/**
 * Retries failed deliveries (`{ ids }`, or all with `{}`); one the hub cannot send to stays listed,
 * and why is shown next to the table until the next retry.
 */
export async function retry(body) {
  const notice = $("retry-notice");
  try {
    const { skipped } = await api("deliveries/retry", body);
    notice.textContent = skipped.map((s) => `Not retried: ${s.id}: ${s.reason}`).join("\n");
    notice.hidden = skipped.length === 0;
  } catch (error) {
    setStatus("closed", error.message);
  }
  await refreshNow();
}

/** Reloads the page's data now (after an action). */
export const refreshNow = () => refresh();
