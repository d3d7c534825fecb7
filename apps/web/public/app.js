// The hub's web chat: connects to the gateway over WebSocket, sends with
// chat.send, shows the answer as its segments are delivered, and rebuilds the
// view from chat.history after a reload or reconnect.
import { renderMarkdown } from "./markdown.js";
import { token as tokenFromPage } from "./token.js";

const $ = (id) => document.getElementById(id);
const messages = $("messages");
const statusEl = $("status");
const bubbles = new Map(); // runId -> assistant bubble
let ws;
let nextId = 1;
const pending = new Map();
let retryMs = 500;
let activeRun = null;
// Messages chat.send may have handed to the hub but whose answer never came (the connection dropped): sent
// again with the same idempotency key once connected again, so each is answered once whatever became of
// the first try (the hub answers a repeat with the run it already has).
const unconfirmed = new Map(); // idempotencyKey -> { text, token } (the token it was sent with)
// Chat events that arrive while the history loads, shown after it: the history was read before them, and
// rendering it clears the view (an answer finished meanwhile would vanish until the next reload).
let heldEvents = null;

function setStatus(state, text) {
  statusEl.dataset.state = state;
  statusEl.textContent = text;
}

// The agent's answers are markdown, rendered from DOM nodes only (markdown.js); everything else is plain text.
function setText(el, text) {
  if (el.classList.contains("assistant")) el.replaceChildren(renderMarkdown(text));
  else el.textContent = text;
}

function addMessage(role, text, runId) {
  const el = document.createElement("div");
  el.className = `msg ${role}`;
  setText(el, text);
  if (runId) el.dataset.runId = runId;
  messages.append(el);
  messages.scrollTop = messages.scrollHeight;
  return el;
}

function request(method, params) {
  const id = nextId++;
  ws.send(JSON.stringify({ type: "req", id, method, params }));
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

function bubbleFor(runId) {
  let el = bubbles.get(runId);
  if (!el) {
    el = addMessage("assistant", "", runId);
    el.dataset.segments = "[]";
    bubbles.set(runId, el);
  }
  return el;
}

function onChatEvent(p) {
  const el = bubbleFor(p.runId);
  if (p.state === "delta") {
    // Segments arrive in order; keep them by seq so a repeat is harmless.
    const segments = JSON.parse(el.dataset.segments ?? "[]");
    segments[p.seq] = p.text;
    el.dataset.segments = JSON.stringify(segments);
    setText(el, segments.filter((s) => s !== null).join("\n\n"));
    el.classList.add("pending");
  } else if (p.state === "final") {
    if (p.text) setText(el, p.text);
    el.classList.remove("pending");
    runEnded(p.runId);
  } else {
    el.classList.remove("pending");
    el.className = "msg error";
    el.textContent = p.state === "aborted" ? "Stopped." : p.text;
    runEnded(p.runId);
  }
  messages.scrollTop = messages.scrollHeight;
}

function runEnded(runId) {
  if (activeRun === runId) {
    activeRun = null;
    $("stop").hidden = true;
  }
}

async function loadHistory() {
  heldEvents = [];
  try {
    const res = await request("chat.history", { limit: 200 });
    messages.textContent = "";
    bubbles.clear();
    for (const m of res.messages) {
      const el = addMessage(m.role, m.text, m.runId);
      if (m.role === "assistant" && m.runId) bubbles.set(m.runId, el);
    }
  } finally {
    const held = heldEvents;
    heldEvents = null;
    for (const payload of held) onChatEvent(payload);
  }
}

function connect() {
  const token = tokenFromPage();
  if (!token) {
    $("login").hidden = false;
    setStatus("closed", "token needed");
    return;
  }
  setStatus("connecting", "connecting…");
  ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`);
  ws.onopen = async () => {
    try {
      await request("connect", { auth: { token }, client: "webchat" });
      setStatus("open", "connected");
      retryMs = 500;
      $("login").hidden = true;
      // A token without the "read" scope may still send: the connection stays open, without the history.
      await loadHistory().catch((error) => {
        if (error.code !== "forbidden") throw error;
        setStatus("open", "connected (this token cannot read the history)");
      });
      for (const [key, { text, token: sentWith }] of unconfirmed) {
        if (sentWith === token) void send(text, key);
        else {
          // Signed in as someone else since: not sent in their name.
          unconfirmed.delete(key);
          addMessage("error", `Not sent (the page signed in with another token since): ${text}`);
        }
      }
    } catch (error) {
      setStatus("closed", error.message);
      if (error.code === "unauthorized") {
        localStorage.removeItem("hub.token");
        $("login").hidden = false;
      }
    }
  };
  ws.onmessage = (msg) => {
    const frame = JSON.parse(msg.data);
    if (frame.type === "res") {
      const p = pending.get(frame.id);
      if (!p) return;
      pending.delete(frame.id);
      if (frame.ok) p.resolve(frame.payload);
      else p.reject(Object.assign(new Error(frame.error.message), { code: frame.error.code }));
    } else if (frame.type === "event" && frame.event === "chat") {
      if (heldEvents) heldEvents.push(frame.payload);
      else onChatEvent(frame.payload);
    }
  };
  ws.onclose = () => {
    for (const p of pending.values()) p.reject(new Error("disconnected"));
    pending.clear();
    if (!localStorage.getItem("hub.token")) return;
    setStatus("closed", "disconnected; reconnecting…");
    setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 10_000);
  };
}

function newKey() {
  return crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

$("composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = $("input").value.trim();
  if (!text || !ws || ws.readyState !== WebSocket.OPEN) return;
  $("input").value = "";
  await send(text, newKey());
});

// One chat.send; a repeat (after a reconnect) shows the question only if the history did not.
async function send(text, key) {
  if (!messages.querySelector(`.msg.user[data-run-id="${CSS.escape(key)}"]`)) addMessage("user", text, key);
  unconfirmed.set(key, { text, token: tokenFromPage() });
  try {
    const res = await request("chat.send", { text, idempotencyKey: key });
    unconfirmed.delete(key);
    if (res.status !== "accepted" && res.status !== "in_flight") return; // answered already: in the history
    activeRun = res.runId;
    $("stop").hidden = false;
    bubbleFor(res.runId).classList.add("pending");
  } catch (error) {
    if (error.message === "disconnected") return; // kept in `unconfirmed`: sent again on reconnect
    unconfirmed.delete(key);
    addMessage("error", `Not sent: ${error.message}`);
  }
}

$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    $("composer").requestSubmit();
  }
});

$("stop").addEventListener("click", () => {
  if (activeRun) request("chat.abort", { runId: activeRun }).catch(() => {});
});

$("login").addEventListener("submit", (e) => {
  e.preventDefault();
  localStorage.setItem("hub.token", $("token").value.trim());
  connect();
});

// While `hub channels login` links a device, the owner's page shows its code too (the gateway
// gives link codes to the owner only; other clients never see one).
function showLink(entry) {
  const box = $("link");
  if (!entry) {
    box.hidden = true;
    return;
  }
  const { link } = entry.status;
  $("link-title").textContent = `Link ${entry.channel} (${entry.accountId})`;
  $("link-qr").hidden = !link.qrImage;
  if (link.qrImage && $("link-qr").src !== link.qrImage) $("link-qr").src = link.qrImage;
  const code = link.pairingCode ?? "";
  $("link-code").textContent = code ? `Pairing code: ${code.slice(0, 4)}-${code.slice(4)}` : "";
  $("link-help").textContent = link.qrImage
    ? "Scan it with WhatsApp on your phone: Settings > Linked devices > Link a device."
    : "On your phone: Settings > Linked devices > Link a device > Link with phone number instead.";
  box.hidden = false;
}

async function pollLinks() {
  if (!ws || ws.readyState !== WebSocket.OPEN || statusEl.dataset.state !== "open") return;
  try {
    const { channels } = await request("channels.status");
    showLink(channels.find((c) => c.status?.link));
  } catch {
    // A client without the read scope sees no channel states.
  }
}
setInterval(pollLinks, 3000);

connect();
