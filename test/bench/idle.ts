// Idle sessions: S chats each send one message and get their answer, then sit idle. Prints what
// they cost at rest: Redis memory (INFO used_memory) per session, and the bench process's RSS after
// each half of the load. The hub's in-memory caches are bounded (1,000 sessions), so the projection
// to 100,000 sessions uses the second half's growth per session, once the caches are full.
import { Redis } from "ioredis";
import { type BenchHub, startBenchHub } from "./telegram.js";
import { driveChats } from "./telegram-load.js";

const usedMemory = async (redis: Redis) =>
  Number(/^used_memory:(\d+)/m.exec(await redis.info("memory"))?.[1] ?? 0);

async function settledRss(): Promise<number> {
  await new Promise((r) => setTimeout(r, 500));
  globalThis.gc?.();
  return process.memoryUsage().rss;
}

// One message each from `chats` new chats; the fake's record of the calls is the load's, not the hub's.
async function idleChats(bench: BenchHub, chats: number, firstChat: number): Promise<number> {
  const load = await driveChats(bench.fake, { chats, messages: 1, window: 1, timeoutMs: 300_000, firstChat });
  bench.fake.calls.length = 0;
  return load.answered;
}

/** Drives `sessions` one-message chats through the hub (after a warm-up) and prints the idle cost. */
export async function benchIdleSessions(redisUrl: string, sessions: number): Promise<void> {
  const redis = new Redis(redisUrl);
  const bench = await startBenchHub(redisUrl);
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  try {
    const warm = Math.min(500, sessions);
    await idleChats(bench, warm, 0);
    const rss0 = await settledRss();
    const mem0 = await usedMemory(redis);
    const half = Math.ceil(sessions / 2);
    const first = await idleChats(bench, half, warm);
    const rss1 = await settledRss();
    const second = await idleChats(bench, sessions - half, warm + half);
    const rss2 = await settledRss();
    const mem2 = await usedMemory(redis);
    const answered = first + second;
    const perSession = (mem2 - mem0) / Math.max(1, answered);
    const rssPerSession = (rss2 - rss1) / Math.max(1, second);
    const total = warm + answered;
    const projected = rss2 + Math.max(0, rssPerSession) * (100_000 - total);
    console.log(
      `  ${total} idle sessions (one answered message each): Redis ${perSession.toFixed(0)} bytes each ` +
        `(about ${mb(perSession * 100_000)} MB at 100,000); process RSS (hub, fake and load, earlier phases ` +
        `included) ${mb(rss0)} -> ${mb(rss1)} -> ${mb(rss2)} MB, second half ${rssPerSession.toFixed(0)} ` +
        `bytes/session (about ${mb(projected)} MB at 100,000)`,
    );
  } finally {
    await bench.stop();
    redis.disconnect();
  }
}
