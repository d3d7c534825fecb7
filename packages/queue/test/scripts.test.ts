import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { runScript } from "../src/redis.js";
import { CLAIM_NEXT, DELAY, PUSH, RECLAIM, SWEEP } from "../src/scripts.js";

// The mailbox's safety rests on these atomic steps; each race is replayed here step by step.
const redis = new Redis(REDIS_URL);
const prefix = testPrefix("scripts");
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

let n = 0;
function box() {
  const base = `${prefix}:mb:${n++}`;
  const key = "k";
  const k = {
    q: `${base}:q:${key}`,
    own: `${base}:own:${key}`,
    nb: `${base}:nb:${key}`,
    sched: `${base}:sched`,
    att: `${base}:att:${key}`,
    ready: `${base}:ready`,
    delayed: `${base}:delayed`,
  };
  return {
    base,
    k,
    push: (...items: string[]) =>
      runScript(
        redis,
        PUSH,
        [k.q, k.sched, k.ready, k.own, k.att],
        [Date.now(), 1000, key, "", 5000, ...items],
      ) as Promise<number>,
    claim: (token: string, lease = 5000) =>
      runScript(
        redis,
        CLAIM_NEXT,
        [k.own, k.nb, k.sched, k.q, k.att],
        [token, lease, Date.now(), key],
      ) as Promise<[string, number] | number>,
    delay: (token: string, ms: number) =>
      runScript(
        redis,
        DELAY,
        [k.own, k.nb, k.sched, k.delayed, k.att],
        [token, key, ms, Date.now(), 1000, ""],
      ) as Promise<number>,
    reclaim: (token: string, now: number, graceMs: number) =>
      runScript(
        redis,
        RECLAIM,
        [k.own, k.sched, k.ready, k.att],
        [token, now, key, graceMs],
      ) as Promise<number>,
    sweep: (now: number) =>
      runScript(redis, SWEEP, [k.sched, k.ready], [now, 1000, 100, base]) as Promise<string[]>,
  };
}

describe("mailbox scripts", () => {
  it("the first push owes a wake-up and puts the key on ready; pushes while one is owed do not", async () => {
    const b = box();
    expect(await b.push("a|1")).toBe(1);
    expect(await b.push("b|2", "c|3")).toBe(0);
    expect(await redis.lrange(b.k.ready, 0, -1)).toEqual(["k"]);
    expect(await redis.lrange(b.k.q, 0, -1)).toEqual(["a|1", "b|2", "c|3"]);
  });

  it("a push keeps the order of many items", async () => {
    const b = box();
    const items = Array.from({ length: 1203 }, (_, i) => `i${i}|${i}`);
    await b.push(...items);
    expect(await redis.lrange(b.k.q, 0, -1)).toEqual(items);
  });

  it("a delayed key cannot be claimed until its delay passes, and waits in delayed", async () => {
    const b = box();
    await b.push("a|1");
    await b.claim("t1");
    expect(await b.delay("t1", 300)).toBe(1);
    expect(await redis.zscore(b.k.delayed, "k")).not.toBeNull();
    expect(await b.claim("t2")).toBe(-1);
    await new Promise((r) => setTimeout(r, 350));
    expect(await b.claim("t2")).toEqual(["a|1", 2]);
  });

  it("the sweeper wakes a key owed a drain with no live drainer, and leaves a live one alone", async () => {
    const b = box();
    await b.push("a|1");
    // The push's wake-up was taken by a worker that died before claiming: the sweep wakes the key again.
    await redis.del(b.k.ready);
    expect(await b.sweep(Date.now() + 60_000)).toEqual(["k"]);
    expect(await redis.lrange(b.k.ready, 0, -1)).toEqual(["k"]);
    await b.claim("t1");
    expect(await b.sweep(Date.now() + 120_000)).toEqual([]);
    expect(await redis.lrange(b.k.ready, 0, -1)).toEqual(["k"]);
  });

  it("a reclaimed key goes on ready once, with a wake-up's deadline, so the sweep does not wake it again", async () => {
    const b = box();
    await b.push("a|1");
    await redis.del(b.k.ready);
    await b.claim("t1");
    // Another token's reclaim changes nothing.
    const now = Date.now();
    expect(await b.reclaim("t2", now, 1000)).toBe(0);
    expect(await redis.get(b.k.own)).toBe("t1");
    expect(await b.reclaim("t1", now, 1000)).toBe(1);
    expect(await redis.exists(b.k.own, b.k.att)).toBe(0);
    expect(await redis.lrange(b.k.ready, 0, -1)).toEqual(["k"]);
    expect(Number(await redis.zscore(b.k.sched, "k"))).toBe(now + 1000);
    // Waiting on ready for a slot, within its grace: the sweep leaves it; past it, the sweep wakes it.
    expect(await b.sweep(now + 999)).toEqual([]);
    expect(await b.sweep(now + 1001)).toEqual(["k"]);
  });
});
