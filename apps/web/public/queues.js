// The hub's queue view (/admin/queues): every key of the reply and run
// mailboxes with items waiting, who drains it, how long it is held back, and
// its first items; failed deliveries with Retry. Built from text nodes only.
import { $, api, button, fill, retry, runPage } from "./control-common.js";

const ago = (at) => (at ? `${Math.max(0, Math.round((Date.now() - at) / 1000))} s ago` : "");
const inSeconds = (at) => (at ? `${Math.max(0, Math.round((at - Date.now()) / 1000))} s` : "");
const short = (text) => (text.length > 80 ? `${text.slice(0, 80)}…` : text);

/** One line per head item: its id, tries, age, and the text it carries. */
function headOf(key) {
  return key.head
    .map((item) => {
      const data = typeof item.data === "object" && item.data !== null ? item.data : {};
      const text = typeof data.text === "string" ? ` "${short(data.text)}"` : "";
      return `${item.id} (try ${item.attempts}${data.at ? `, queued ${ago(data.at)}` : ""})${text}`;
    })
    .join("\n");
}

function renderMailbox(view) {
  $(`${view.name}-summary`).textContent =
    `${view.totalKeys} key(s) with items; ${view.ready} waiting for a free worker` +
    (view.totalKeys > view.keys.length ? `; the ${view.keys.length} deepest shown` : "");
  fill($(view.name), ["key", "waiting", "drained by", "held for", "first items"], view.keys, (k) => [
    k.key,
    String(k.depth),
    k.drainer ?? "nobody (waiting for a worker)",
    inSeconds(k.delayedUntil),
    headOf(k),
  ]);
}

function render({ queues, overview }) {
  for (const view of queues.mailboxes) renderMailbox(view);
  fill($("failed"), ["id", "target", "error", "text", ""], overview.failedDeliveries, (f) => [
    f.id,
    `${f.target.channel}/${f.target.accountId} ${f.target.chatId}`,
    f.error,
    short(f.text),
    button("Retry", () => retry({ ids: [f.id] })),
  ]);
  $("retry-all").disabled = overview.failedDeliveries.length === 0;
}

$("retry-all").addEventListener("click", async () => {
  await retry({});
});

await runPage(async () => ({ queues: await api("queues"), overview: await api("overview") }), render);
