import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { runScript } from "../src/redis.js";
import { ACK, CLAIM, DELAY, FINISH, PEEK, PUSH, SWEEP } from "../src/scripts.js";

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
    epoch: `${base}:epoch`,
    att: `${base}:att`,
  };
  return {
    base,
    push: (...items: string[]) =>
      runScript(redis, PUSH, [k.q, k.sched, k.epoch], [Date.now(), 1000, key, ...items]) as Promise<number>,
    claim: (token: string, lease = 5000) =>
      runScript(redis, CLAIM, [k.own, k.nb, k.sched], [token, lease, Date.now(), key]) as Promise<number>,
    peek: (token: string) =>
      runScript(redis, PEEK, [k.own, k.q, k.sched, k.att], [token, 5000, Date.now(), key]) as Promise<
        [string, number] | null
      >,
    ack: (token: string, id: string) =>
      runScript(redis, ACK, [k.own, k.q, k.att], [token, id, `${key}|${id}`]) as Promise<number>,
    finish: (token: string) =>
      runScript(redis, FINISH, [k.own, k.q, k.sched], [token, key]) as Promise<number>,
    delay: (token: string, ms: number) =>
      runScript(
        redis,
        DELAY,
        [k.own, k.nb, k.sched, k.epoch],
        [token, key, ms, Date.now(), 1000],
      ) as Promise<number>,
    sweep: (now: number) =>
      runScript(redis, SWEEP, [k.sched, k.epoch], [now, 1000, 100, base]) as Promise<Array<string | number>>,
  };
}

describe("mailbox scripts", () => {
  it("the first push owes a wake-up; pushes while one is owed do not", async () => {
    const b = box();
    expect(await b.push("a|1")).toBeGreaterThan(0);
    expect(await b.push("b|2")).toBe(0);
  });

  it("a push racing with a finishing drainer is never stranded", async () => {
    const b = box();
    await b.push("a|1");
    expect(await b.claim("t1")).toBe(1);
    expect((await b.peek("t1"))?.[0]).toBe("a|1");
    expect(await b.ack("t1", "a")).toBe(1);
    expect(await b.peek("t1")).toBeNull();
    // The push lands between the drainer's "empty" and its "done": it owes no new wake-up...
    expect(await b.push("b|2")).toBe(0);
    // ...so the drainer must not stop.
    expect(await b.finish("t1")).toBe(0);
    expect((await b.peek("t1"))?.[0]).toBe("b|2");
    await b.ack("t1", "b");
    expect(await b.finish("t1")).toBe(1);
    // After a real finish, the next push owes a fresh wake-up.
    expect(await b.push("c|3")).toBeGreaterThan(0);
  });

  it("one drainer at a time; a stale drainer can neither ack nor finish", async () => {
    const b = box();
    await b.push("a|1");
    expect(await b.claim("t1", 200)).toBe(1);
    expect(await b.claim("t2")).toBe(0);
    await new Promise((r) => setTimeout(r, 250));
    expect(await b.claim("t2")).toBe(1);
    await expect(b.ack("t1", "a")).rejects.toThrow(/LOST/);
    await expect(b.finish("t1")).rejects.toThrow(/LOST/);
    await expect(b.peek("t1")).rejects.toThrow(/LOST/);
    expect(await b.ack("t2", "a")).toBe(1);
  });

  it("ack pops only the item it names, and counts attempts per item", async () => {
    const b = box();
    await b.push("a|1", "b|2");
    await b.claim("t");
    expect((await b.peek("t"))?.[1]).toBe(1);
    expect((await b.peek("t"))?.[1]).toBe(2);
    expect(await b.ack("t", "b")).toBe(0);
    expect(await b.ack("t", "a")).toBe(1);
    expect(await b.peek("t")).toEqual(["b|2", 1]);
  });

  it("a delayed key cannot be claimed until its delay passes", async () => {
    const b = box();
    await b.push("a|1");
    await b.claim("t1");
    expect(await b.delay("t1", 300)).toBeGreaterThan(0);
    expect(await b.claim("t2")).toBe(-1);
    await new Promise((r) => setTimeout(r, 350));
    expect(await b.claim("t2")).toBe(1);
  });

  it("the sweeper wakes a key owed a drain with no live drainer, and leaves a live one alone", async () => {
    const b = box();
    await b.push("a|1");
    expect(await b.sweep(Date.now() + 60_000)).toHaveLength(2);
    await b.claim("t1");
    expect(await b.sweep(Date.now() + 120_000)).toEqual([]);
  });
});
