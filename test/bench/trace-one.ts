// Scratch: one chat, N messages through the hub, against BENCH_REDIS_URL (for MONITOR traces).
import { benchHubTelegram } from "./telegram.js";

const url = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6416";
await benchHubTelegram(url, {
  chats: Number(process.env.C ?? 1),
  messages: Number(process.env.M ?? 3),
  window: Number(process.env.W ?? 1),
  timeoutMs: 20000,
});
process.exit(0);
