// The hub's control page: reads /api/control/overview with the gateway token
// every few seconds and offers the operator's actions (stop a run, approve or
// deny a pairing, retry failed deliveries, read a transcript). Everything is
// built from DOM nodes and text, never innerHTML: names and messages come from
// strangers on the platforms.
const $ = (id) => document.getElementById(id);
const REFRESH_MS = 3000;

function token() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const fromHash = hash.get("token");
  if (fromHash) {
    localStorage.setItem("hub.token", fromHash);
    history.replaceState(null, "", location.pathname);
  }
  return localStorage.getItem("hub.token");
}

async function api(path, body) {
  const res = await fetch(`/api/control/${path}`, {
    method: body ? "POST" : "GET",
    headers: { authorization: `Bearer ${token()}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = await res.json();
  if (!res.ok) throw Object.assign(new Error(json.error ?? `HTTP ${res.status}`), { status: res.status });
  return json;
}

function setStatus(state, text) {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

function cell(content) {
  const td = document.createElement("td");
  if (content instanceof Node) td.append(content);
  else td.textContent = content ?? "";
  return td;
}

function button(label, action) {
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
function fill(table, headers, items, row) {
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

function stateLabel(status) {
  const span = document.createElement("span");
  span.dataset.state = status.state;
  span.textContent = status.state;
  return span;
}

const seconds = (ms) => `${Math.round(ms / 1000)} s`;

function render(o) {
  fill($("channels"), ["channel", "account", "state", "last error"], o.channels, (c) => [
    c.channel,
    c.accountId,
    stateLabel(c.status),
    c.status.reason ?? "",
  ]);
  fill($("runs"), ["run", "session", "elapsed", ""], o.runs, (r) => [
    r.runId,
    r.sessionKey,
    seconds(r.elapsedMs),
    button("Stop", () => api("runs/stop", { runId: r.runId })),
  ]);
  fill($("queues"), ["queue", "waiting"], Object.entries(o.queueDepths), ([q, n]) => [q, String(n)]);
  fill($("pairing"), ["channel", "code", "sender", ""], o.pairing, (p) => {
    const actions = document.createElement("span");
    actions.append(
      button("Approve", () => api("pairing/approve", { channel: p.channel, code: p.code })),
      button("Deny", () => api("pairing/deny", { channel: p.channel, code: p.code })),
    );
    return [p.channel, p.code, `${p.senderId}${p.senderName ? ` (${p.senderName})` : ""}`, actions];
  });
  fill($("failed"), ["id", "target", "error", "text", ""], o.failedDeliveries, (f) => [
    f.id,
    `${f.target.channel}/${f.target.accountId} ${f.target.chatId}`,
    f.error,
    f.text.length > 120 ? `${f.text.slice(0, 120)}…` : f.text,
    button("Retry", () => api("deliveries/retry", { ids: [f.id] })),
  ]);
  $("retry-all").disabled = o.failedDeliveries.length === 0;
  fill($("sessions"), ["session", "updated", ""], o.sessions, (s) => [
    s.sessionKey,
    new Date(s.updatedAt).toLocaleString(),
    button("Transcript", () => showTranscript(s.sessionKey)),
  ]);
}

async function showTranscript(sessionKey) {
  const t = await api(`transcript?sessionKey=${encodeURIComponent(sessionKey)}`);
  $("transcript-key").textContent = sessionKey;
  $("transcript").replaceChildren(
    ...t.entries.map((e) => {
      const li = document.createElement("li");
      li.dataset.type = e.type;
      li.textContent = `[${e.type}] ${typeof e.text === "string" ? e.text : (e.status ?? "")}`;
      return li;
    }),
  );
  $("transcript-panel").hidden = false;
}

async function refresh() {
  if (!token()) {
    $("login").hidden = false;
    setStatus("closed", "token needed");
    return;
  }
  try {
    render(await api("overview"));
    $("login").hidden = true;
    setStatus("open", `updated ${new Date().toLocaleTimeString()}`);
  } catch (error) {
    setStatus("closed", error.message);
    if (error.status === 401) {
      localStorage.removeItem("hub.token");
      $("login").hidden = false;
    }
  }
}

$("retry-all").addEventListener("click", async () => {
  await api("deliveries/retry", {}).catch((error) => setStatus("closed", error.message));
  await refresh();
});

$("login").addEventListener("submit", (e) => {
  e.preventDefault();
  localStorage.setItem("hub.token", $("token").value.trim());
  refresh();
});

await refresh();
setInterval(refresh, REFRESH_MS);
