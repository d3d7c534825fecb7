import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { runScript } from "../src/redis.js";
import { ACK_NEXT, CLAIM_NEXT, DELAY, PROMOTE, PUSH } from "../src/scripts.js";

// The fused steps (claim returns the first item, ack returns the next or finishes) keep the races of
// the separate steps closed: each is replayed here step by step.
const redis = new Redis(REDIS_URL);
const prefix = testPrefix("fused");
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
    epoch: `${base}:epoch`,
    att: `${base}:att`,
    delayed: `${base}:delayed`,
    ready: `${base}:ready`,
  };
  type Next = [string, number] | null;
  return {
    k,
    push: (...items: string[]) =>
      runScript(redis, PUSH, [k.q, k.sched, k.epoch], [Date.now(), 1000, key, ...items]) as Promise<number>,
    claim: (token: string, lease = 5000) =>
      runScript(
        redis,
        CLAIM_NEXT,
        [k.own, k.nb, k.sched, k.q, k.att],
        [token, lease, Date.now(), key],
      ) as Promise<Next | number>,
    ack: (token: string, id: string) =>
      runScript(
        redis,
        ACK_NEXT,
        [k.own, k.q, k.att, k.sched],
        [token, id, `${key}|${id}`, 5000, Date.now(), key],
      ) as Promise<Next>,
    delay: (token: string, ms: number) =>
      runScript(
        redis,
        DELAY,
        [k.own, k.nb, k.sched, k.epoch],
        [token, key, ms, Date.now(), 1000],
      ) as Promise<number>,
  };
}

describe("fused mailbox scripts", () => {
  it("claim returns the first item; ack returns the next, then finishes the key", async () => {
    const b = box();
    await b.push("a|1", "b|2");
    expect(await b.claim("t1")).toEqual(["a|1", 1]);
    expect(await b.ack("t1", "a")).toEqual(["b|2", 1]);
    expect(await b.ack("t1", "b")).toBeNull();
    expect(await redis.exists(b.k.own)).toBe(0);
    expect(await redis.zscore(b.k.sched, "k")).toBeNull();
    // Finished: the next push owes a fresh wake-up.
    expect(await b.push("c|3")).toBeGreaterThan(0);
  });

  it("a push racing with the last ack is either taken by it or owes a new wake-up", async () => {
    const b = box();
    await b.push("a|1");
    await b.claim("t1");
    // Lands before the ack: no wake-up owed, and the ack hands it over.
    expect(await b.push("b|2")).toBe(0);
    expect(await b.ack("t1", "a")).toEqual(["b|2", 1]);
    expect(await b.ack("t1", "b")).toBeNull();
    // Lands after the finishing ack: a wake-up is owed.
    expect(await b.push("c|3")).toBeGreaterThan(0);
  });

  it("one drainer at a time; a stale drainer cannot ack; an empty key is not claimed", async () => {
    const b = box();
    expect(await b.claim("t0")).toBe(2);
    await b.push("a|1");
    expect(await b.claim("t1", 200)).toEqual(["a|1", 1]);
    expect(await b.claim("t2")).toBe(0);
    await new Promise((r) => setTimeout(r, 250));
    expect(await b.claim("t2")).toEqual(["a|1", 2]);
    await expect(b.ack("t1", "a")).rejects.toThrow(/LOST/);
    expect(await b.ack("t2", "a")).toBeNull();
  });

  it("a delayed key is not claimed until its delay passes; promote moves due keys to ready", async () => {
    const b = box();
    await b.push("a|1");
    await b.claim("t1");
    await b.delay("t1", 200);
    expect(await b.claim("t2")).toBe(-1);
    await redis.zadd(b.k.delayed, Date.now() + 200, "k");
    expect(await runScript(redis, PROMOTE, [b.k.delayed, b.k.ready], [Date.now(), 100])).toBe(0);
    await new Promise((r) => setTimeout(r, 250));
    expect(await runScript(redis, PROMOTE, [b.k.delayed, b.k.ready], [Date.now(), 100])).toBe(1);
    expect(await redis.lrange(b.k.ready, 0, -1)).toEqual(["k"]);
    expect(await b.claim("t2")).toEqual(["a|1", 2]);
  });
});
