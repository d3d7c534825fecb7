// Idle sessions: S chats each send one message and get their answer, then sit idle. Prints what
// they cost at rest: Redis memory (INFO used_memory) per session, and the hub's own RSS. The hub runs
// as its own process here (`hub start` with a config file, as the README starts it), so its RSS is
// the hub's alone (read from /proc), not the bench's. Its in-memory caches are bounded, so the
// projection to 100,000 sessions uses the second half's growth per session, once the caches are full.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeTelegram } from "@hub/fakes";
import { Redis } from "ioredis";
import { HUB_NODE_FLAGS } from "../../apps/hub/src/v8-tuning.js";
import { freePort, startHubProcess } from "../support/hub-process.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";
import { benchStateDir } from "./telegram.js";
import { driveChats } from "./telegram-load.js";

const usedMemory = async (redis: Redis) =>
  Number(/^used_memory:(\d+)/m.exec(await redis.info("memory"))?.[1] ?? 0);

/** Resident memory of a process, in bytes (Linux /proc). */
function rssOf(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb ?? 0) * 1024;
}

// The hub idles before its RSS is read; its V8 heap comes from /metrics.
async function settledRss(pid: number, metricsUrl: string): Promise<number> {
  // V8's memory reducer collects and gives memory back a few seconds after allocation stops: an idle hub.
  await new Promise((r) => setTimeout(r, Number(process.env.BENCH_IDLE_SETTLE_MS ?? 5_000)));
  const text = await (await fetch(metricsUrl)).text();
  const heap = Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? 0);
  console.log(
    `    (hub heap used ${(heap / 1024 / 1024).toFixed(0)} MB, RSS ${(rssOf(pid) / 1024 / 1024).toFixed(0)} MB)`,
  );
  return rssOf(pid);
}

/** Drives `sessions` one-message chats through a hub process (after a warm-up) and prints the idle cost. */
export async function benchIdleSessions(redisUrl: string, sessions: number): Promise<void> {
  const redis = new Redis(redisUrl);
  const fake = await startFakeTelegram();
  const stateDir = benchStateDir();
  const configFile = join(stateDir, "hub.json5");
  writeFileSync(
    configFile,
    JSON.stringify({
      redis: { url: redisUrl, prefix: `bench-idle-${process.pid}` },
      agent: { offlineTokenDelayMs: 0, queueMode: "followup" },
      channels: {
        telegram: fakeTelegramChannel(fake, ["*"]),
      },
    }),
  );
  const port = await freePort();
  const hub = await startHubProcess(
    {
      REDIS_URL: redisUrl,
      HUB_CONFIG: configFile,
      HUB_STATE_DIR: stateDir,
      HUB_LOG_LEVEL: "warn",
      // With the flags `npm start` gives the hub (HUB_NODE_FLAGS), and its heap capped as a container would
      // cap it: without a cap, V8 on a big machine lets garbage pile up for long before it collects, and the
      // RSS says more about that than about the hub. A flag in BENCH_HUB_NODE_OPTIONS wins (it comes last).
      NODE_OPTIONS: [
        ...HUB_NODE_FLAGS,
        process.env.BENCH_HUB_NODE_OPTIONS ?? "--max-old-space-size=160",
      ].join(" "),
    },
    port,
  );
  const metricsUrl = `http://127.0.0.1:${port}/metrics`;
  const pid = hub.child.pid ?? 0;
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  // One message each from `chats` new chats; the fake's record of the calls is the load's, not the hub's.
  // In rounds of 2,000 chats, so the fake's own bookkeeping stays small at 100,000.
  const idleChats = async (chats: number, firstChat: number) => {
    let answered = 0;
    for (let done = 0; done < chats; done += 2000) {
      const round = Math.min(2000, chats - done);
      const load = await driveChats(fake, {
        chats: round,
        messages: 1,
        window: 1,
        timeoutMs: 300_000,
        firstChat: firstChat + done,
      });
      fake.calls.length = 0;
      answered += load.answered;
    }
    return answered;
  };
  try {
    const warm = Math.min(500, sessions);
    await idleChats(warm, 0);
    const rss0 = await settledRss(pid, metricsUrl);
    const mem0 = await usedMemory(redis);
    const half = Math.ceil(sessions / 2);
    const first = await idleChats(half, warm);
    const rss1 = await settledRss(pid, metricsUrl);
    const second = await idleChats(sessions - half, warm + half);
    const rss2 = await settledRss(pid, metricsUrl);
    const mem2 = await usedMemory(redis);
    const answered = first + second;
    const perSession = (mem2 - mem0) / Math.max(1, answered);
    const rssPerSession = (rss2 - rss1) / Math.max(1, second);
    const total = warm + answered;
    const projected = rss2 + Math.max(0, rssPerSession) * (100_000 - total);
    // RSS moves by tens of MB with the collector's timing alone: over a few thousand sessions that
    // noise, not the sessions, would make the projection (±30 MB over 1,250 sessions is ±2 GB at 100,000).
    const projection =
      second >= 20_000
        ? `(about ${mb(projected)} MB at 100,000)`
        : "(too few sessions to project; BENCH_IDLE_SESSIONS=100000 measures it)";
    console.log(
      `  ${total} idle sessions (one answered message each): Redis ${perSession.toFixed(0)} bytes each ` +
        `(about ${mb(perSession * 100_000)} MB at 100,000); hub process RSS (under tsx, heap capped: BENCH_HUB_NODE_OPTIONS) ${mb(rss0)} -> ` +
        `${mb(rss1)} -> ${mb(rss2)} MB, second half ${rssPerSession.toFixed(0)} bytes/session ${projection}`,
    );
  } finally {
    await hub.stop();
    await fake.close();
    redis.disconnect();
  }
}
