// Fault runs of ordered delivery (issue 16), shared by the CI-sized tests and `npm run bench:faults`:
// real delivery worker processes draining real Redis into a fake chat platform, while delivery workers
// are SIGKILLed at random moments or the Redis (AOF on, its own port) is killed and restarted mid-load.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createLogger, type ReplyStream, type ReplyTarget } from "@hub/core";
import { ReplyDispatcher } from "@hub/reply";
import { type FakeChatPlatform, startFakeChatPlatform } from "../fakes/src/index.js";
import { mulberry32 } from "../support/prng.js";
import { testPrefix } from "../support/redis.js";
import { type OwnRedis, startOwnRedis } from "../support/redis-server.js";

const WORKER = fileURLToPath(new URL("../e2e/fixtures/delivery-worker.ts", import.meta.url));

/** The shape and the faults of one delivery fault run. */
export interface DeliveryFaultOptions {
  /** Reply targets (one chat each), each getting `replies` replies of `segments` segments. */
  chats: number;
  replies?: number;
  segments?: number;
  /** Delivery worker processes running at once (a killed one is replaced at once). */
  workers?: number;
  /** SIGKILL a random worker every `min..max` ms while segments are left; none when unset. */
  killEveryMs?: [number, number];
  /** Kill Redis (SIGKILL; AOF with fsync on every write) and start it again this long into the load. */
  restartRedisAfterMs?: number;
  /** Delivery lease (ms): how long a killed worker's targets wait before another worker takes them. */
  leaseMs?: number;
  /** The fake platform's delay per send (ms), so kills land mid-send. */
  sendDelayMs?: number;
  seed?: number;
  timeoutMs?: number;
}

/** What the platform finally saw. */
export interface DeliveryFaultResult {
  segments: number;
  received: number;
  lost: number;
  outOfOrder: number;
  duplicates: number;
  failed: number;
  kills: number;
  redisRestarts: number;
  seconds: number;
}

interface Workers {
  spawn(): Promise<void>;
  killOne(random: () => number): Promise<void>;
  stop(): void;
}

function workerPool(redisUrl: string, prefix: string, platform: FakeChatPlatform, leaseMs: number): Workers {
  const live: ChildProcess[] = [];
  return {
    async spawn() {
      const child = spawn(process.execPath, ["--import", "tsx", WORKER], {
        env: {
          ...process.env,
          PREFIX: prefix,
          REDIS_URL: redisUrl,
          PLATFORM_URL: platform.url,
          LEASE_MS: String(leaseMs),
        },
        stdio: ["ignore", "pipe", "inherit"],
      });
      live.push(child);
      await new Promise<void>((resolve, reject) => {
        child.stdout?.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
        child.once("exit", (code, signal) =>
          reject(new Error(`delivery worker exited early (${code ?? signal})`)),
        );
      });
    },
    async killOne(random) {
      const victim = live.splice(Math.floor(random() * live.length), 1)[0];
      if (!victim) return;
      const exited = new Promise((r) => victim.once("exit", r));
      victim.kill("SIGKILL");
      await exited;
    },
    stop() {
      for (const child of live.splice(0)) child.kill("SIGKILL");
    },
  };
}

/** Per chat: every segment id the platform got, in arrival order, folded into lost / out of order / duplicates. */
export function judgeArrivals(
  arrived: ReadonlyArray<{ chatId: string; replyId: string; index: number }>,
  expected: ReadonlyMap<string, string[]>,
): { received: number; lost: number; outOfOrder: number; duplicates: number } {
  const byChat = new Map<string, string[]>();
  for (const m of arrived) {
    const list = byChat.get(m.chatId) ?? [];
    list.push(`${m.replyId}#${m.index}`);
    byChat.set(m.chatId, list);
  }
  let received = 0;
  let lost = 0;
  let outOfOrder = 0;
  let duplicates = 0;
  for (const [chatId, ids] of expected) {
    const got = byChat.get(chatId) ?? [];
    received += got.length;
    const firsts = got.filter((id, i) => got.indexOf(id) === i);
    duplicates += got.length - firsts.length;
    lost += ids.filter((id) => !firsts.includes(id)).length;
    // Out of order: a first arrival that came before one of the segments queued ahead of it.
    const order = new Map(ids.map((id, i) => [id, i]));
    let highest = -1;
    for (const id of firsts) {
      const at = order.get(id) ?? -1;
      if (at < highest) outOfOrder++;
      highest = Math.max(highest, at);
    }
  }
  return { received, lost, outOfOrder, duplicates };
}

async function queueReplies(
  producer: ReplyDispatcher,
  o: Required<Pick<DeliveryFaultOptions, "chats" | "replies" | "segments">>,
): Promise<{ streams: ReplyStream[]; expected: Map<string, string[]> }> {
  const expected = new Map<string, string[]>();
  const streams: ReplyStream[] = [];
  const target = (chatId: string): ReplyTarget => ({ channel: "fakechat", accountId: "default", chatId });
  for (let r = 0; r < o.replies; r++) {
    await Promise.all(
      Array.from({ length: o.chats }, async (_, c) => {
        const chatId = `chat-${c}`;
        const replyId = `reply-${c}-${r}`;
        const stream = producer.open(replyId, target(chatId));
        streams.push(stream);
        const ids = expected.get(chatId) ?? [];
        for (let s = 0; s < o.segments; s++) {
          await stream.push(`${replyId} segment ${s}`);
          ids.push(`${replyId}#${s}`);
        }
        expected.set(chatId, ids);
        await stream.end();
      }),
    );
  }
  return { streams, expected };
}

/**
 * The faults of one run, until `isDone`: a worker killed (and replaced) every `killEveryMs`, and Redis
 * restarted once when `restartRedisAfterMs` is due, whichever comes first; kills go on after the restart.
 */
async function runChaos(
  o: DeliveryFaultOptions,
  started: number,
  random: () => number,
  pool: Workers,
  redis: OwnRedis,
  isDone: () => boolean,
  counts: { kills: number; redisRestarts: number },
): Promise<void> {
  let restartAt = o.restartRedisAfterMs === undefined ? Infinity : started + o.restartRedisAfterMs;
  const nextKillIn = (): number => {
    if (!o.killEveryMs) return Infinity;
    const [min, max] = o.killEveryMs;
    return min + random() * (max - min);
  };
  let killAt = Date.now() + nextKillIn();
  while (!isDone() && (killAt !== Infinity || restartAt !== Infinity)) {
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(killAt, restartAt) - Date.now())));
    if (isDone()) return;
    if (Date.now() >= restartAt) {
      await redis.restart({ downMs: 300 });
      counts.redisRestarts++;
      restartAt = Infinity;
    } else {
      await pool.killOne(random);
      counts.kills++;
      await pool.spawn();
      killAt = Date.now() + nextKillIn();
    }
  }
}

/** Runs one delivery fault run and reports what the platform saw. */
export async function deliveryFaultRun(options: DeliveryFaultOptions): Promise<DeliveryFaultResult> {
  const o = {
    replies: 1,
    segments: 5,
    workers: 3,
    leaseMs: 1500,
    sendDelayMs: 2,
    seed: 16,
    timeoutMs: 120_000,
    ...options,
  };
  const random = mulberry32(o.seed);
  const redis: OwnRedis = await startOwnRedis();
  const platform = await startFakeChatPlatform();
  platform.setDelay(o.sendDelayMs);
  const prefix = testPrefix("faults");
  const producer = new ReplyDispatcher({
    redisUrl: redis.url,
    prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => ({ textLimit: 200, markdown: "plain", threads: true, typing: false, edit: false }),
  });
  const pool = workerPool(redis.url, prefix, platform, o.leaseMs);
  const counts = { kills: 0, redisRestarts: 0 };
  let done = false;
  let chaos: Promise<void> = Promise.resolve();
  try {
    await Promise.all(Array.from({ length: o.workers }, () => pool.spawn()));
    const started = Date.now();
    chaos = runChaos(o, started, random, pool, redis, () => done, counts);
    const { streams, expected } = await queueReplies(producer, o);
    const settled = await withTimeout(Promise.all(streams.map((s) => s.settled())), o.timeoutMs);
    const seconds = (Date.now() - started) / 1000;
    done = true;
    await chaos;
    const judged = judgeArrivals(platform.messages, expected);
    return {
      segments: o.chats * o.replies * o.segments,
      ...judged,
      failed: settled.reduce((n, s) => n + s.failed, 0),
      ...counts,
      seconds,
    };
  } finally {
    done = true;
    // A spawn or a restart under way finishes first, so none is left running after the pool and Redis stop.
    await chaos.catch(() => {});
    pool.stop();
    await producer.close();
    await platform.close();
    await redis.stop();
  }
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the fault run did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
