// A hub process whose Redis is down (for the journal test): its WhatsApp adapter, on a fake linked device,
// receives one message it cannot admit, prints "trying <message id>" at its first try and keeps trying
// until it is killed. A fourth argument is the sender's phone JID beside a LID `from` (as baileys adds it to the
// key after decoding: `remoteJidAlt`, not a protobuf field).
import { createLogger, type InboundResult } from "@hub/core";
import { WhatsAppAdapter } from "../src/adapter.js";
import { messageJournal } from "../src/journal.js";
import { directText, FakeWhatsApp } from "./fake-whatsapp.js";

const [stateDir, from, text, fromAlt] = process.argv.slice(2) as [string, string, string, string?];
const wa = new FakeWhatsApp();
const adapter = new WhatsAppAdapter({
  connector: wa,
  logger: createLogger({ level: "silent" }),
  journal: messageJournal(stateDir, "default"),
  admitRetry: { initialMs: 50, maxMs: 200 },
});
const message = directText(from, text);
if (fromAlt && message.key) Object.assign(message.key, { remoteJidAlt: fromAlt });
let tries = 0;
await adapter.start(async (): Promise<InboundResult> => {
  if (++tries === 1) console.log(`trying ${message.key?.id}`);
  return { kind: "retry", reason: "Redis is unreachable" };
});
wa.sockets[0]?.upsert([message]);
