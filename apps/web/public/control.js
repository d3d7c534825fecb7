// The hub's control page: reads /api/control/overview with the gateway token
// every few seconds and offers the operator's actions (stop a run, approve or
// deny a pairing, retry failed deliveries, read a transcript).
import { $, api, button, fill, retry, runPage } from "./control-common.js";

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
    c.status.reason ??
      (c.status.lastError
        ? `${c.status.lastError.reason} (${new Date(c.status.lastError.at).toLocaleString()})`
        : ""),
  ]);
  fill($("runs"), ["run", "session", "model", "elapsed", ""], o.runs, (r) => [
    r.runId,
    r.sessionKey,
    r.model,
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
    button("Retry", () => retry({ ids: [f.id] })),
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

$("retry-all").addEventListener("click", async () => {
  await retry({});
});

await runPage(() => api("overview"), render);
