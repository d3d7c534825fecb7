// A hub process holding a WhatsApp account (for the SIGSTOP test): connects through the lease,
// then tries a send every 50 ms and prints what became of each ("SENT n" or "REFUSED n").
import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { redisLease } from "../../../test/support/redis-lease.js";
import { WhatsAppAdapter } from "../src/adapter.js";
import { FakeWhatsApp } from "./fake-whatsapp.js";

const [url, key, ttl] = process.argv.slice(2) as [string, string, string];
const wa = new FakeWhatsApp();
const adapter = new WhatsAppAdapter({
  connector: wa,
  lease: redisLease(new Redis(url), key, Number(ttl)),
  logger: createLogger({ level: "silent" }),
});
await adapter.start(async () => ({ kind: "accepted" }));
while (adapter.status().state !== "connected") await new Promise((r) => setTimeout(r, 20));
console.log("connected");
let n = 0;
setInterval(() => {
  const i = ++n;
  adapter
    .send(
      { replyId: "r", index: 1, text: `tick ${i}` },
      { channel: "whatsapp", accountId: "default", chatId: "1@s.whatsapp.net" },
    )
    .then(() => console.log(`SENT ${i}`))
    .catch(() => console.log(`REFUSED ${i}`));
}, 50);
