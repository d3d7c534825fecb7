import { createHash } from "node:crypto";
import { createLogger, PermanentSendError, PID_SPACE, RateLimitedError, WriteFencedError } from "@hub/core";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { monitorRedis } from "../../../test/support/monitor.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import {
  groupEndId,
  groupOfItem,
  type MailboxWorker,
  mailboxBase,
  mailboxKeyName,
  OrderedMailbox,
  runScript,
  scriptWith,
} from "../src/index.js";
import { ACK_NEXT, PUSH } from "../src/scripts.js";

const logger = createLogger({ level: "silent" });
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The test mailbox "m" under a prefix, with no tuning. */
const mailboxOf = (prefix: string) => ({
  name: "m",
  redisUrl: REDIS_URL,
  prefix,
  logger,
  parse: (raw: unknown) => raw as { n: number },
});

function setup(
  name: string,
  extra: {
    maxAttempts?: number;
    leaseMs?: number;
    onFailed?: (id: string) => void;
    groups?: boolean;
    burst?: number;
    slotWaitMs?: number;
  } = {},
) {
  const prefix = testPrefix(name);
  const mailbox = new OrderedMailbox<{ n: number }>({
    ...mailboxOf(prefix),
    sweepIntervalMs: 100,
    graceMs: 500,
    maxAttempts: extra.maxAttempts ?? 5,
    leaseMs: extra.leaseMs ?? 2000,
    onFailed: async (item) => extra.onFailed?.(item.id),
    ...(extra.groups ? { groups: { ttlSeconds: 60 } } : {}),
    ...(extra.burst ? { burst: extra.burst } : {}),
    ...(extra.slotWaitMs ? { slotWaitMs: extra.slotWaitMs } : {}),
  });
  const workers: MailboxWorker[] = [];
  cleanups.push(async () => {
    for (const w of workers) await w.close();
    await mailbox.close();
    await dropPrefix(prefix);
  });
  return { mailbox, workers, prefix };
}

/** The same mailbox as another process sees it: it pushes, and drains nothing. */
function otherProcess(prefix: string): OrderedMailbox<{ n: number }> {
  const mailbox = new OrderedMailbox<{ n: number }>(mailboxOf(prefix));
  cleanups.push(() => mailbox.close());
  return mailbox;
}

/** Every key written to the test mailbox's ready list (a wake-up), seen by Redis itself (MONITOR). */
async function readyWrites(prefix: string): Promise<string[]> {
  const ready = `${mailboxBase(prefix, "m")}:ready`;
  const monitor = await monitorRedis();
  cleanups.push(async () => void monitor.disconnect());
  const woken: string[] = [];
  monitor.on("monitor", (_time: string, args: string[]) => {
    if (args[0]?.toLowerCase() === "rpush" && args[1] === ready) woken.push(String(args[2]));
  });
  return woken;
}

/**
 * A one-slot worker for the slot-wait tests: each key's drain takes its `timings` ms, or (for "gate")
 * until the test opens its gate. `drainEnded(key)`: that key's drain has ended (lease gone, slot free);
 * `woken`: every key written to the ready list; `slotNow()`: what a step would be given now.
 */
async function oneSlotWorker(name: string, timings: Record<string, number | "gate">) {
  // slotWaitMs well above the tests' drain times (100 ms, 40 ms), so a loaded machine's slower timers
  // do not change which side of half of it a drain falls on.
  const { mailbox, workers, prefix } = setup(name, { leaseMs: 6000, slotWaitMs: 800 });
  // Watched before the worker's first command (a MONITOR started amid traffic may lose its first reply).
  const woken = await readyWrites(prefix);
  const gates = new Map<string, () => void>();
  const handled: Array<[string, number]> = [];
  workers.push(
    mailbox.startWorker(
      async (_item, ctx) => {
        handled.push([ctx.key, ctx.attempt]);
        const timing = timings[ctx.key];
        if (timing === "gate") await new Promise<void>((r) => gates.set(ctx.key, r));
        else if (timing) await new Promise((r) => setTimeout(r, timing));
      },
      { concurrency: 1 },
    ),
  );
  const push = (key: string) => mailbox.push(key, [{ id: "a", data: { n: 1 } }], { drainHere: true });
  const drainEnded = async (key: string) => {
    await waitFor(
      async () => handled.some(([k]) => k === key) && !(await mailbox.hasDrainer(key)),
      `${key}'s end`,
    );
    await new Promise((r) => setTimeout(r, 50));
  };
  // What a step would be given now (its reservation given back at once).
  const slotNow = () => {
    const slot = mailbox.reserveDrainHere();
    slot?.cancel();
    return slot;
  };
  return { mailbox, woken, gates, handled, push, drainEnded, slotNow };
}

describe("OrderedMailbox", () => {
  it("handles every item of each key once and in order, keys in parallel", async () => {
    const { mailbox, workers } = setup("order");
    const seen = new Map<string, number[]>();
    workers.push(
      mailbox.startWorker(
        async (item, ctx) => {
          await new Promise((r) => setTimeout(r, Math.random() * 3));
          seen.set(ctx.key, [...(seen.get(ctx.key) ?? []), item.data.n]);
        },
        { concurrency: 8 },
      ),
    );
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
    // Push in many small batches, interleaved, so pushes race with finishing drainers.
    for (let n = 0; n < 15; n++) {
      await Promise.all(keys.map((key) => mailbox.push(key, [{ id: `i${n}`, data: { n } }])));
      if (n % 5 === 0) await new Promise((r) => setTimeout(r, 10));
    }
    await waitFor(() => keys.every((k) => (seen.get(k)?.length ?? 0) >= 15), "all items handled");
    await new Promise((r) => setTimeout(r, 200));
    for (const key of keys) expect(seen.get(key)).toEqual(Array.from({ length: 15 }, (_, n) => n));
  });

  it("a push made once per id queues its items once, whoever repeats it, and before and after other items", async () => {
    const { mailbox, workers, prefix } = setup("once");
    const seen: number[] = [];
    workers.push(mailbox.startWorker(async (item) => void seen.push(item.data.n), { concurrency: 1 }));
    const once = { id: "run-1.notice", ttlSeconds: 60 };
    await mailbox.push("k", [{ id: "a", data: { n: 1 } }]);
    expect(await mailbox.push("k", [{ id: "b", data: { n: 2 } }], { once })).toBe(true);
    // A retry, or another process finding the same end after a crash: nothing queued.
    expect(await otherProcess(prefix).push("k", [{ id: "b", data: { n: 2 } }], { once })).toBe(false);
    expect(await mailbox.push("k", [{ id: "b", data: { n: 2 } }], { once, drainHere: true })).toBe(false);
    expect(await mailbox.push("k", [{ id: "c", data: { n: 3 } }])).toBe(true);
    await waitFor(() => seen.length >= 3, "the items handled");
    await new Promise((r) => setTimeout(r, 200));
    expect(seen).toEqual([1, 2, 3]);
    await expect(
      mailbox.push("k", [{ id: "d", data: { n: 4 } }], { once, fence: { key: "f", field: "w", value: "1" } }),
    ).rejects.toThrow("not fenced");
  });

  it("a busy key lets a waiting key go first after its burst, and a lone key drains on", async () => {
    const { mailbox, workers } = setup("burst", { burst: 3 });
    const seen: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    workers.push(
      mailbox.startWorker(
        async (item, ctx) => {
          if (ctx.key === "busy" && item.data.n === 0) await gate;
          seen.push(`${ctx.key}${item.data.n}`);
        },
        { concurrency: 1 },
      ),
    );
    await mailbox.push(
      "busy",
      Array.from({ length: 8 }, (_, n) => ({ id: `b${n}`, data: { n } })),
    );
    await waitFor(async () => (await mailbox.hasDrainer("busy")) === true, "busy is being drained");
    // The only slot is busy's: "other" waits on the ready list.
    await mailbox.push("other", [{ id: "o0", data: { n: 0 } }]);
    release();
    await waitFor(() => seen.length === 9, "every item handled");
    // After three of busy's items, the waiting key's one; then busy on, in order, with nobody waiting.
    expect(seen).toEqual(["busy0", "busy1", "busy2", "other0", "busy3", "busy4", "busy5", "busy6", "busy7"]);
  });

  it("a lone key drains on after its burst even when a stale wake-up of it waits on ready", async () => {
    const { mailbox, workers, prefix } = setup("burst-stale", { burst: 3 });
    await mailbox.push(
      "lone",
      Array.from({ length: 12 }, (_, n) => ({ id: `i${n}`, data: { n } })),
    );
    // A second wake-up of the same key, as the sweep adds for a key that waited on ready past its grace.
    const redis = new Redis(REDIS_URL);
    await redis.rpush(`${mailboxBase(prefix, "m")}:ready`, "lone");
    redis.disconnect();
    const drains = new Set<AbortSignal>();
    const seen: number[] = [];
    workers.push(
      mailbox.startWorker(
        async (item, ctx) => {
          drains.add(ctx.signal);
          seen.push(item.data.n);
        },
        { concurrency: 1 },
      ),
    );
    await waitFor(() => seen.length === 12, "every item handled");
    expect(seen).toEqual(Array.from({ length: 12 }, (_, n) => n));
    // Each drain has its own lease and signal: a yield would have ended this one after three items.
    expect(drains.size).toBe(1);
  });

  it("delays the whole key on a rate limit, then continues in order", async () => {
    const { mailbox, workers } = setup("ratelimit");
    const seen: Array<{ n: number; at: number }> = [];
    let limited = false;
    workers.push(
      mailbox.startWorker(
        async (item) => {
          if (item.data.n === 1 && !limited) {
            limited = true;
            throw new RateLimitedError(600);
          }
          seen.push({ n: item.data.n, at: Date.now() });
        },
        { concurrency: 2 },
      ),
    );
    await mailbox.push(
      "a",
      [0, 1, 2, 3].map((n) => ({ id: `i${n}`, data: { n } })),
    );
    await waitFor(() => seen.length === 4, "all four items");
    expect(seen.map((s) => s.n)).toEqual([0, 1, 2, 3]);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(550);
  });

  it("a rate limit told as 0 ms or a fraction delays the key too (Redis takes no PX 0), then continues", async () => {
    const failed: string[] = [];
    const { mailbox, workers } = setup("ratelimit-zero", {
      maxAttempts: 2,
      onFailed: (id) => failed.push(id),
    });
    const seen: number[] = [];
    const tries = new Map<number, number>();
    workers.push(
      mailbox.startWorker(
        async (item) => {
          const n = item.data.n;
          tries.set(n, (tries.get(n) ?? 0) + 1);
          // Told to wait 0 ms (item 1) or 1.5 ms (item 2) three times: more than its attempts, none a failure.
          // The wait as a thrower outside RateLimitedError's constructor may carry it.
          const wait = n === 1 ? 0 : 1.5;
          if (n > 0 && (tries.get(n) ?? 0) <= 3)
            throw Object.assign(new RateLimitedError(1), { retryAfterMs: wait });
          seen.push(n);
        },
        { concurrency: 1 },
      ),
    );
    await mailbox.push(
      "z",
      [0, 1, 2].map((n) => ({ id: `z${n}`, data: { n } })),
    );
    await waitFor(() => seen.length === 3 || failed.length > 0, "all three items");
    expect(failed).toEqual([]);
    expect(seen).toEqual([0, 1, 2]);
  });

  it("gives up a permanently failing item and keeps the rest", async () => {
    const failed: string[] = [];
    const { mailbox, workers } = setup("permanent", { onFailed: (id) => failed.push(id) });
    const seen: number[] = [];
    workers.push(
      mailbox.startWorker(
        async (item) => {
          if (item.data.n === 1) throw new PermanentSendError("blocked");
          seen.push(item.data.n);
        },
        { concurrency: 1 },
      ),
    );
    await mailbox.push(
      "a",
      [0, 1, 2].map((n) => ({ id: `i${n}`, data: { n } })),
    );
    await waitFor(() => seen.length === 2, "two delivered");
    expect(seen).toEqual([0, 2]);
    expect(failed).toEqual(["i1"]);
  });

  it("retries a transient failure with backoff, then gives up after maxAttempts", async () => {
    const failed: string[] = [];
    const { mailbox, workers } = setup("transient", { maxAttempts: 3, onFailed: (id) => failed.push(id) });
    const tries: number[] = [];
    workers.push(
      mailbox.startWorker(
        async (item, ctx) => {
          if (item.data.n === 0) {
            tries.push(ctx.attempt);
            throw new Error("network down");
          }
        },
        { concurrency: 1 },
      ),
    );
    await mailbox.push("a", [{ id: "i0", data: { n: 0 } }]);
    await waitFor(() => failed.length === 1, "item given up");
    expect(tries).toEqual([1, 2, 3]);
    expect(await mailbox.depth("a")).toBe(0);
  });

  it("wakes a key whose wake-up job was never added (process died after the push)", async () => {
    const { mailbox, workers, prefix } = setup("sweep");
    // Recreate the crash window: the item is queued and owed a drain, but no BullMQ job exists.
    const redis = new Redis(REDIS_URL);
    await redis.rpush(`${prefix}:mb:m:q:lonely`, `i0|${JSON.stringify({ n: 7 })}`);
    await redis.zadd(`${prefix}:mb:m:sched`, Date.now(), "lonely");
    redis.disconnect();
    const seen: number[] = [];
    workers.push(mailbox.startWorker(async (item) => void seen.push(item.data.n), { concurrency: 1 }));
    await waitFor(() => seen.length === 1, "swept item drained");
    expect(seen).toEqual([7]);
  });

  it("counts each failed item toward its group once, and the group's last ack settles and announces it", async () => {
    const { mailbox, workers } = setup("groups", { groups: true, maxAttempts: 2 });
    const sub = new Redis(REDIS_URL);
    const heard: string[] = [];
    sub.on("message", (_c: string, m: string) => heard.push(m));
    await sub.subscribe(mailbox.groupChannel);
    cleanups.push(async () => void sub.disconnect());
    let crashedOnce = false;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    workers.push(
      mailbox.startWorker(
        async (item, ctx) => {
          if (item.data.n === 0) await gate;
          if (item.data.n === 1) throw new PermanentSendError("refused");
          if (item.data.n === 2) return ctx.countAsFailed();
          // A transient failure is retried, and still counted once.
          if (item.data.n === 3 && !crashedOnce) {
            crashedOnce = true;
            throw new Error("transient");
          }
        },
        { concurrency: 2 },
      ),
    );
    const items = [0, 1, 2, 3].map((n) => ({ id: `r1#${n}`, data: { n } }));
    // Not segments of r1: counted nowhere. The last item names the group's total.
    await mailbox.push("k", [...items.slice(0, 2), { id: "r1#p0", data: { n: 9 } }, ...items.slice(2)]);
    await mailbox.push("k", [{ id: groupEndId("r1", 4, 5), data: { n: 4 } }]);
    await waitFor(async () => (await mailbox.depth("k")) === 6, "both pushes queued");
    expect(await mailbox.groupStatus("r1")).toEqual({ total: 0, delivered: 0, failed: 0, settled: false });
    release();
    await waitFor(async () => (await mailbox.groupStatus("r1")).settled, "the group settled", 10_000);
    expect(await mailbox.groupStatus("r1")).toEqual({ total: 5, delivered: 3, failed: 2, settled: true });
    await waitFor(() => heard.length > 0, "the announcement");
    expect(heard).toEqual(["r1|5|3|2"]);
    expect(OrderedMailbox.parseGroupSettled(heard[0] ?? "")).toEqual({
      group: "r1",
      status: { total: 5, delivered: 3, failed: 2, settled: true },
    });
  });

  it("a push may drain its key here: an idle key is claimed in the push's step, no wake-up", async () => {
    const { mailbox, workers, prefix } = setup("drain-here");
    const woken = await readyWrites(prefix);
    const seen: Array<[string, number, number]> = [];
    workers.push(
      mailbox.startWorker(async (item, ctx) => void seen.push([ctx.key, item.data.n, ctx.attempt]), {
        concurrency: 4,
      }),
    );
    await mailbox.push(
      "here",
      [
        { id: "a", data: { n: 1 } },
        { id: "b", data: { n: 2 } },
      ],
      { drainHere: true },
    );
    await waitFor(() => seen.length === 2, "drained here");
    // A process that does not drain this mailbox pushes as before: through the ready list.
    const elsewhere = otherProcess(prefix);
    await elsewhere.push("there", [{ id: "c", data: { n: 3 } }], { drainHere: true });
    await waitFor(() => seen.length === 3, "woken and drained");
    expect(seen).toEqual([
      ["here", 1, 1],
      ["here", 2, 1],
      ["there", 3, 1],
    ]);
    await waitFor(() => woken.length === 1, "the one wake-up seen");
    expect(woken).toEqual(["there"]);
  });

  it("a handler may ack its item in a step of its own: the worker goes on from that step's answer", async () => {
    const { mailbox, workers, prefix } = setup("ack-step", { burst: 2 });
    const markAndAck = scriptWith(new URL("./fixtures/mark-and-ack.lua", import.meta.url), "ack-next");
    const ackSha = createHash("sha1").update(ACK_NEXT).digest("hex");
    // Every ack script Redis runs on this test's keys, seen by Redis itself (other test files ack theirs on
    // the same Redis): the worker runs none of its own.
    const monitor = await monitorRedis();
    cleanups.push(async () => void monitor.disconnect());
    let workerAcks = 0;
    monitor.on("monitor", (_time: string, args: string[]) => {
      const ours = args.slice(3).some((arg) => arg.startsWith(prefix));
      if (String(args[0]).toLowerCase() === "evalsha" && args[1] === ackSha && ours) workerAcks++;
    });
    const commands = new Redis(REDIS_URL);
    cleanups.push(async () => void commands.disconnect());
    const list = mailboxKeyName(mailboxBase(prefix, "m"), "q", "k");
    const seen: Array<[number, number, string[]]> = [];
    workers.push(
      mailbox.startWorker(
        async (item, ctx) => {
          const step = ctx.ackStep();
          const mark = `${prefix}:mark`;
          step.acked(
            await runScript(commands, markAndAck, [mark, ...step.keys], [item.data.n, ...step.args]),
          );
          // The item is gone from the list with the step that wrote the mark.
          const left = await commands.lrange(list, 0, -1);
          seen.push([
            item.data.n,
            Number(await commands.get(mark)),
            left.map((entry) => entry.split("|")[0] ?? ""),
          ]);
        },
        { concurrency: 1 },
      ),
    );
    await mailbox.push(
      "k",
      [1, 2, 3].map((n) => ({ id: `i${n}`, data: { n } })),
    );
    await waitFor(() => seen.length === 3, "three items handled");
    expect(seen).toEqual([
      [1, 1, ["i2", "i3"]],
      [2, 2, ["i3"]],
      [3, 3, []],
    ]);
    // Drained to the end from the handler's answers: the key is finished (no lease, not owed).
    expect(await commands.exists(mailboxKeyName(mailboxBase(prefix, "m"), "own", "k"))).toBe(0);
    expect(await commands.zscore(`${mailboxBase(prefix, "m")}:sched`, "k")).toBeNull();
    expect(workerAcks).toBe(0);
  });

  it("a handler that fails after acking its item in its own step: the item is done, the next goes on", async () => {
    const failedFor: string[] = [];
    const { mailbox, workers, prefix } = setup("ack-step-throw", { onFailed: (id) => failedFor.push(id) });
    const markAndAck = scriptWith(new URL("./fixtures/mark-and-ack.lua", import.meta.url), "ack-next");
    const commands = new Redis(REDIS_URL);
    cleanups.push(async () => void commands.disconnect());
    const handled: Array<[number, number]> = [];
    workers.push(
      mailbox.startWorker(
        async (item, ctx) => {
          handled.push([item.data.n, ctx.attempt]);
          const step = ctx.ackStep();
          step.acked(
            await runScript(commands, markAndAck, [`${prefix}:mark`, ...step.keys], [1, ...step.args]),
          );
          if (item.data.n === 1) throw new Error("failed after its ack");
        },
        { concurrency: 1 },
      ),
    );
    await mailbox.push(
      "k",
      [1, 2].map((n) => ({ id: `i${n}`, data: { n } })),
    );
    await waitFor(() => handled.length === 2, "both items handled");
    await new Promise((r) => setTimeout(r, 300));
    // Neither retried nor given up: the first was acked by its own step, the second handed out by it.
    expect(handled).toEqual([
      [1, 1],
      [2, 1],
    ]);
    expect(failedFor).toEqual([]);
  });

  it("keys claimed by this process's pushes and keys from the ready list never exceed the worker's slots", async () => {
    const { mailbox, workers, prefix } = setup("drain-here-slots");
    const elsewhere = otherProcess(prefix);
    let running = 0;
    let most = 0;
    const seen = new Map<string, number[]>();
    workers.push(
      mailbox.startWorker(
        async (item, ctx) => {
          most = Math.max(most, ++running);
          await new Promise((r) => setTimeout(r, 2 + Math.random() * 8));
          seen.set(ctx.key, [...(seen.get(ctx.key) ?? []), item.data.n]);
          running--;
        },
        { concurrency: 2 },
      ),
    );
    // Half the keys pushed here (claimed while a slot is free), half by a process that does not drain.
    const pushes: Array<Promise<boolean>> = [];
    for (let n = 0; n < 3; n++)
      for (let k = 0; k < 16; k++) {
        const box = k % 2 === 0 ? mailbox : elsewhere;
        pushes.push(box.push(`k${k}`, [{ id: `i${n}`, data: { n } }], { drainHere: true }));
      }
    await Promise.all(pushes);
    await waitFor(() => [...seen.values()].flat().length === 48, "every item", 20_000);
    expect(most).toBeLessThanOrEqual(2);
    for (const order of seen.values()) expect(order).toEqual([0, 1, 2]);
  });

  it("a key claimed while every slot is busy waits here for one, and goes back to the ready list after slotWaitMs", async () => {
    // Drains of 100 ms: a slot frees up well within half of slotWaitMs.
    const t = await oneSlotWorker("slot-wait", { quick: 100, "busy-1": 100, "busy-2": "gate" });
    const { gates, handled, push, woken } = t;
    // A drain first: how soon slots free up here is known only from drains that ended.
    await push("quick");
    await t.drainEnded("quick");
    handled.length = 0;
    // The one slot is busy: the next key is claimed to wait for it, and takes it as soon as it frees up.
    await push("busy-1");
    await push("waits");
    await waitFor(() => handled.length === 2, "the waiting key handled");
    expect(handled).toEqual([
      ["busy-1", 1],
      ["waits", 1],
    ]);
    expect(woken).toEqual([]);
    // A key that waits longer than slotWaitMs goes back to the ready list, its claim undone. (busy-2
    // is pushed once the slot is free again, so it is claimed here, not woken through the ready list.)
    await t.drainEnded("waits");
    await push("busy-2");
    await waitFor(() => gates.has("busy-2"), "busy-2 running");
    try {
      await push("handed-back");
      await waitFor(() => woken.includes("handed-back"), "the hand-back", 5_000);
      // Still waiting on the ready list for the busy slot, for a few sweeps (100 ms) within its grace
      // (500 ms): woken once, not again by a sweep (the hand-back gives it a wake-up's deadline).
      await new Promise((r) => setTimeout(r, 300));
      expect(woken).toEqual(["handed-back"]);
    } finally {
      gates.get("busy-2")?.();
    }
    await waitFor(() => handled.length === 4, "the handed-back key handled");
    await new Promise((r) => setTimeout(r, 200));
    expect(handled.slice(2)).toEqual([
      ["busy-2", 1],
      ["handed-back", 1],
    ]);
  });

  it("behind slow drains a key is not claimed to wait for a slot: it goes to the ready list for any process", async () => {
    const { gates, push, drainEnded, slotNow } = await oneSlotWorker("slot-wait-slow", {
      slow: 700,
      busy: "gate",
    });
    // A drain of 700 ms: a slot here frees up later than half of slotWaitMs.
    await push("slow");
    await drainEnded("slow");
    await push("busy");
    await waitFor(() => gates.has("busy"), "busy running");
    expect(slotNow()).toBeUndefined();
    gates.get("busy")?.();
  });

  it("behind a drain far older than the recent ones (a long turn) a key is not claimed to wait either", async () => {
    const { gates, push, drainEnded, slotNow } = await oneSlotWorker("slot-wait-long", {
      short: 40,
      long: "gate",
    });
    // Short drains first: slots here have been freeing up fast.
    await push("short");
    await drainEnded("short");
    await push("long");
    try {
      // Young, the long drain may still end as fast as the others (40 ms): a key may wait for its slot.
      expect(slotNow()?.waits).toBe(true);
      await waitFor(() => gates.has("long"), "the long drain running");
      // Far older than the recent drains: no slot is expected soon, the key goes to the ready list.
      await new Promise((r) => setTimeout(r, 400));
      expect(slotNow()).toBeUndefined();
    } finally {
      await waitFor(() => gates.has("long"), "the long drain running");
      gates.get("long")?.();
    }
  });

  it("a key claimed for a worker that began closing goes back to the ready list for another", async () => {
    const { mailbox, workers, prefix } = setup("drain-here-closing", { leaseMs: 5000 });
    const first = mailbox.startWorker(async () => {}, { concurrency: 1 });
    const slot = mailbox.reserveDrainHere();
    expect(slot?.waits).toBe(false);
    // The slot is held: no second claim counts on it (nor waits for it: no drain has shown how soon slots
    // free up here), and the closing worker waits for it.
    expect(mailbox.reserveDrainHere()).toBeUndefined();
    const closed = first.close();
    const handled: Array<[number, number]> = [];
    workers.push(
      mailbox.startWorker(async (item, ctx) => void handled.push([item.data.n, ctx.attempt]), {
        concurrency: 1,
      }),
    );
    // The idle key claimed with the slot's token, as a push's step does, then handed to the closing worker.
    const base = mailboxBase(prefix, "m");
    const redis = new Redis(REDIS_URL);
    cleanups.push(async () => void redis.disconnect());
    const keys = (["q", "own", "att"] as const).map((kind) => mailboxKeyName(base, kind, "late"));
    const item = `a|${JSON.stringify({ n: 7 })}`;
    const head = await runScript(
      redis,
      PUSH,
      [keys[0]!, `${base}:sched`, `${base}:ready`, keys[1]!, keys[2]!],
      [Date.now(), 500, "late", slot!.token, 5000, item],
    );
    expect(head).toBe(item);
    slot!.start("late", item, Date.now());
    await closed;
    // Handed back at once, not after the 5 s lease the claim took.
    await waitFor(() => handled.length === 1, "handled by the other worker", 2_000);
    // Its first hand-out: the claim that never reached a handler was undone with its attempt.
    expect(handled).toEqual([[7, 1]]);
  });

  it("a worker is running from its start until it begins closing (readiness counts on it)", async () => {
    const { mailbox } = setup("running");
    const worker = mailbox.startWorker(async () => {}, { concurrency: 1 });
    expect(worker.running()).toBe(true);
    const closed = worker.close();
    expect(worker.running()).toBe(false);
    await closed;
    expect(worker.running()).toBe(false);
  });

  it("reads which group an item id counts toward", () => {
    expect(groupOfItem("r1#0")).toEqual({ group: "r1", segment: true, total: undefined });
    expect(groupOfItem(groupEndId("r1.2", 3, 4))).toEqual({ group: "r1.2", segment: true, total: 4 });
    expect(groupOfItem(groupEndId("r#1", "close", 2))).toEqual({ group: "r#1", segment: false, total: 2 });
    for (const id of ["r1#p0", "r1#close", "r1#", "#3", "r1#2$", "r1#2$x", "plain"])
      expect(groupOfItem(id)).toBeUndefined();
  });

  it("a fenced push writes its note in the same step, and neither once the fence fails", async () => {
    const { mailbox, prefix } = setup("note");
    const redis = new Redis(REDIS_URL);
    cleanups.push(async () => redis.disconnect());
    const fence = { key: `${prefix}:writer`, field: "generation", value: "7" };
    const note = { key: `${prefix}:run`, fields: { shownChars: 4, shownSig: "abc" } };
    await redis.hset(fence.key, "generation", "7");
    await mailbox.push("k", [{ id: "a", data: { n: 1 } }], { fence, note });
    expect(await redis.hgetall(note.key)).toEqual({ shownChars: "4", shownSig: "abc" });
    expect(await mailbox.depth("k")).toBe(1);
    await redis.hset(fence.key, "generation", "8");
    const later = { ...note, fields: { shownChars: 9, shownSig: "def" } };
    await expect(mailbox.push("k", [{ id: "b", data: { n: 2 } }], { fence, note: later })).rejects.toThrow(
      WriteFencedError,
    );
    expect(await redis.hgetall(note.key)).toEqual({ shownChars: "4", shownSig: "abc" });
    expect(await mailbox.depth("k")).toBe(1);
    await expect(mailbox.push("k", [{ id: "c", data: { n: 3 } }], { note })).rejects.toThrow(/fenced/);
    // A value note is a string of its own, kept for its TTL.
    await redis.hset(fence.key, "generation", "9");
    const kept = { key: `${prefix}:answer`, value: '{"text":"hi"}', ttlSeconds: 60 };
    await mailbox.push("k", [{ id: "d", data: { n: 4 } }], { fence: { ...fence, value: "9" }, note: kept });
    expect(await redis.get(kept.key)).toBe('{"text":"hi"}');
    expect(await redis.ttl(kept.key)).toBeGreaterThan(50);
    expect(await redis.ttl(note.key)).toBe(-1);
  });

  it("on a shared commands connection, delivers in order and leaves the connection open when closed", async () => {
    const prefix = testPrefix("shared");
    const shared = new Redis(REDIS_URL);
    const mailbox = new OrderedMailbox<{ n: number }>({
      name: "m",
      redisUrl: REDIS_URL,
      redis: shared,
      prefix,
      logger,
      parse: (raw) => raw as { n: number },
      sweepIntervalMs: 100,
      graceMs: 500,
    });
    const seen: number[] = [];
    const worker = mailbox.startWorker(
      async (item) => {
        seen.push(item.data.n);
      },
      { concurrency: 2 },
    );
    cleanups.push(async () => {
      await worker.close();
      await mailbox.close();
      await dropPrefix(prefix);
      shared.disconnect();
    });
    await mailbox.push(
      "k",
      [0, 1, 2].map((n) => ({ id: `i${n}`, data: { n } })),
    );
    await waitFor(() => seen.length === 3, "all items handled");
    expect(seen).toEqual([0, 1, 2]);
    await mailbox.close();
    expect(await shared.ping()).toBe("PONG");
  });
});

describe("taking over a dead predecessor's keys at start", () => {
  it("takes this installation's keys whose drainer died in this pid space; leaves those of another space alone", async () => {
    const { mailbox, prefix } = setup("mbx-reclaim");
    const redis = new Redis(REDIS_URL);
    cleanups.push(async () => void redis.disconnect());
    const base = mailboxBase(prefix, "m");
    const owned = async (key: string, owner: string) => {
      await mailbox.push(key, [{ id: `${key}-1`, data: { n: 1 } }]);
      await redis.zadd(`${base}:sched`, Date.now() + 60_000, key);
      await redis.set(mailboxKeyName(base, "own", key), owner);
    };
    // Same installation (instance id), a pid that does not run: here, or on another machine sharing the state dir.
    await owned("here", `hub~999999999~start0~${PID_SPACE}~r1`);
    await owned("elsewhere", "hub~999999999~start0~0123456789~r2");
    await owned("older", "hub~999999999~boot~r3"); // a token of an older version names no space
    expect(await mailbox.reclaimDeadPredecessors()).toEqual(["here"]);
    expect(await redis.get(mailboxKeyName(base, "own", "elsewhere"))).toBe(
      "hub~999999999~start0~0123456789~r2",
    );
  });
});
