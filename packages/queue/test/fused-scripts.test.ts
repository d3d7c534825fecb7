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

// What a subscriber hears on a channel (disconnect `sub` when done).
async function listen(channel: string): Promise<{ sub: Redis; heard: string[] }> {
  const sub = new Redis(REDIS_URL);
  const heard: string[] = [];
  sub.on("message", (_c: string, m: string) => heard.push(m));
  await sub.subscribe(channel);
  return { sub, heard };
}

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
    delayed: `${base}:delayed`,
    ready: `${base}:ready`,
    group: `${base}:g:r1`,
    channel: `${base}:settled`,
  };
  type Next = [string, number] | null;
  const ackNext = (
    token: string,
    id: string,
    options: {
      group?: boolean;
      failed?: boolean;
      total?: number;
      renew?: number;
      yieldSlot?: boolean;
      heardHere?: boolean;
    } = {},
  ) =>
    runScript(
      redis,
      ACK_NEXT,
      [k.own, k.q, k.sched, k.att, k.ready, ...(options.group ? [k.group] : [])],
      [
        token,
        id,
        key,
        options.renew ?? 5000,
        Date.now(),
        options.failed ? "failed" : "ok",
        60,
        k.channel,
        "r1",
        options.yieldSlot ? 1 : 0,
        1000,
        options.total ?? "",
        options.heardHere ? 1 : 0,
      ],
    ) as Promise<string | number | null | [string | number, string]>;
  return {
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
      ) as Promise<Next | number>,
    ackNext,
    // A push that may drain the key itself (a claim token): the head when it claimed the idle key.
    pushHere: (token: string, ...items: string[]) =>
      runScript(
        redis,
        PUSH,
        [k.q, k.sched, k.ready, k.own, k.att],
        [Date.now(), 1000, key, token, 5000, ...items],
      ) as Promise<string | number>,
    // As the mailbox sees it: the next item is handed out as its attempt 1.
    ack: async (token: string, id: string, renew?: number): Promise<Next> => {
      const next = await ackNext(token, id, renew === undefined ? {} : { renew });
      return typeof next === "string" ? [next, 1] : null;
    },
    delay: (token: string, ms: number, undo = "") =>
      runScript(
        redis,
        DELAY,
        [k.own, k.nb, k.sched, k.delayed, k.att],
        [token, key, ms, Date.now(), 1000, undo],
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
    expect(await redis.exists(b.k.att)).toBe(0);
    // Finished: the next push owes a fresh wake-up.
    expect(await b.push("c|3")).toBeGreaterThan(0);
  });

  it("a push may claim an idle key for its own process: no wake-up, the head handed out as attempt 1", async () => {
    const b = box();
    const before = Date.now();
    expect(await b.pushHere("t1", "a|1", "b|2")).toBe("a|1");
    expect(await redis.get(b.k.own)).toBe("t1");
    expect(await redis.get(b.k.att)).toBe("1|a");
    expect(await redis.llen(b.k.ready)).toBe(0);
    // Its deadline is the lease's (the sweep wakes the key only if the claimer dies).
    expect(Number(await redis.zscore(b.k.sched, "k"))).toBeGreaterThanOrEqual(before + 5000);
    // Owed already: a later push, claim token or not, leaves the items to the drainer.
    expect(await b.pushHere("t2", "c|3")).toBe(0);
    expect(await redis.get(b.k.own)).toBe("t1");
    expect(await b.claim("t2")).toBe(0);
    expect(await b.ack("t1", "a")).toEqual(["b|2", 1]);
    expect(await b.ack("t1", "b")).toEqual(["c|3", 1]);
    expect(await b.ack("t1", "c")).toBeNull();
    // Idle again: claimed again by a push.
    expect(await b.pushHere("t3", "d|4")).toBe("d|4");
  });

  it("an ack that yields hands the key back behind waiting keys, and only when some key waits", async () => {
    const b = box();
    await b.push("a|1", "b|2", "c|3");
    expect(await b.claim("t1")).toEqual(["a|1", 1]);
    await redis.del(b.k.ready);
    // Nobody waits: the drainer goes on with the next item, its lease renewed.
    expect(await b.ackNext("t1", "a", { yieldSlot: true })).toBe("b|2");
    expect(await redis.get(b.k.own)).toBe("t1");
    await redis.rpush(b.k.ready, "other");
    const before = Date.now();
    expect(await b.ackNext("t1", "b", { yieldSlot: true })).toBe(0);
    // Released (lease and attempts), behind the waiting key, still owed a drain within the grace.
    expect(await redis.exists(b.k.own, b.k.att)).toBe(0);
    expect(await redis.lrange(b.k.ready, 0, -1)).toEqual(["other", "k"]);
    expect(Number(await redis.zscore(b.k.sched, "k"))).toBeGreaterThanOrEqual(before + 1000);
    // The next drainer starts at the item after the acked one, as its first attempt.
    expect(await b.claim("t2")).toEqual(["c|3", 1]);
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

  it("ack pops only the item it names", async () => {
    const b = box();
    await b.push("a|1", "b|2");
    await b.claim("t");
    expect(await b.ackNext("t", "b")).toBe("a|1");
    expect(await redis.lrange(b.k.q, 0, -1)).toEqual(["a|1", "b|2"]);
    expect(await b.ackNext("t", "a")).toBe("b|2");
    expect(await redis.lrange(b.k.q, 0, -1)).toEqual(["b|2"]);
  });

  it("attempts count every hand-out of the head, also by an ack, across crashed drainers", async () => {
    const b = box();
    await b.push("a|1", "b|2", "c|3");
    expect(await b.claim("t1", 100)).toEqual(["a|1", 1]);
    // a's drainer dies: the next drainer's hand-out of a is its second.
    await new Promise((r) => setTimeout(r, 150));
    expect(await b.claim("t2", 100)).toEqual(["a|1", 2]);
    // b is handed out by the ack (its first attempt); its drainer dies too.
    expect(await b.ack("t2", "a", 0)).toEqual(["b|2", 1]);
    await new Promise((r) => setTimeout(r, 150));
    expect(await b.claim("t3", 100)).toEqual(["b|2", 2]);
    await new Promise((r) => setTimeout(r, 150));
    expect(await b.claim("t4")).toEqual(["b|2", 3]);
    // A rate-limited item gets its attempt back with the delay.
    await b.delay("t4", 50, "b");
    await new Promise((r) => setTimeout(r, 80));
    expect(await b.claim("t5")).toEqual(["b|2", 3]);
    // c, handed out by an ack, is rate limited: its next claim is its first attempt again.
    expect(await b.ack("t5", "b")).toEqual(["c|3", 1]);
    await b.delay("t5", 50, "c");
    await new Promise((r) => setTimeout(r, 80));
    expect(await b.claim("t6")).toEqual(["c|3", 1]);
    // A failure (no undo) counts.
    await b.delay("t6", 50);
    await new Promise((r) => setTimeout(r, 80));
    expect(await b.claim("t7")).toEqual(["c|3", 2]);
  });

  it("a delayed key is not claimed until its delay passes; promote moves due keys to ready", async () => {
    const b = box();
    await b.push("a|1");
    await redis.del(b.k.ready);
    await b.claim("t1");
    await b.delay("t1", 200);
    expect(await b.claim("t2")).toBe(-1);
    expect(await runScript(redis, PROMOTE, [b.k.delayed, b.k.ready], [Date.now(), 100])).toBe(0);
    await new Promise((r) => setTimeout(r, 250));
    expect(await runScript(redis, PROMOTE, [b.k.delayed, b.k.ready], [Date.now(), 100])).toBe(1);
    expect(await redis.lrange(b.k.ready, 0, -1)).toEqual(["k"]);
    expect(await b.claim("t2")).toEqual(["a|1", 2]);
  });

  it("a group's last ack settles it: failures counted once each on the way, the counts kept and announced", async () => {
    const b = box();
    const { sub, heard } = await listen(b.k.channel);
    try {
      await b.push("r1#0|a", "r1#1|b", "r1#2$3|c");
      await b.claim("t");
      await b.ackNext("t", "r1#0", { group: true, failed: true });
      // Not the head any more: a second ack of the same item counts nothing.
      await b.ackNext("t", "r1#0", { group: true, failed: true });
      // While the group is open, its record is the count of its failures.
      expect(await redis.get(b.k.group)).toBe("1");
      expect(await redis.ttl(b.k.group)).toBeGreaterThan(0);
      // A delivered item that does not end the group touches nothing of it.
      await b.ackNext("t", "r1#1");
      expect(await redis.get(b.k.group)).toBe("1");
      expect(heard).toEqual([]);
      await b.ackNext("t", "r1#2$3", { group: true, total: 3 });
      expect(await redis.get(b.k.group)).toBe("3|2|1");
      expect(await redis.ttl(b.k.group)).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 50));
      expect(heard).toEqual(["r1|3|2|1"]);
      // An end queued again (its first push's answer was lost on the way back) settles nothing twice.
      await b.push("r1#end$2|d");
      await b.claim("t");
      await b.ackNext("t", "r1#end$2", { group: true, total: 2 });
      await new Promise((r) => setTimeout(r, 50));
      expect(await redis.get(b.k.group)).toBe("3|2|1");
      expect(heard).toEqual(["r1|3|2|1"]);
      // A failure acked after the group settled (an item queued again) leaves the counts alone.
      await b.push("r1#9|e");
      await b.claim("t");
      await b.ackNext("t", "r1#9", { group: true, failed: true });
      expect(await redis.get(b.k.group)).toBe("3|2|1");
    } finally {
      sub.disconnect();
    }
  });

  it("a group nothing failed in settles with its counts, announced once", async () => {
    const b = box();
    const { sub, heard } = await listen(b.k.channel);
    try {
      await b.push("r1#0|a", "r1#1$2|b");
      await b.claim("t");
      await b.ackNext("t", "r1#0");
      await b.ackNext("t", "r1#1$2", { group: true, total: 2 });
      expect(await redis.get(b.k.group)).toBe("2|2|0");
      await new Promise((r) => setTimeout(r, 50));
      expect(heard).toEqual(["r1|2|2|0"]);
    } finally {
      sub.disconnect();
    }
  });

  it("a group settled for a waiter of the acking process returns its counts with the next result, unpublished", async () => {
    const b = box();
    const { sub, heard } = await listen(b.k.channel);
    try {
      await b.push("r1#0$1|a", "x|b");
      await b.claim("t");
      expect(await b.ackNext("t", "r1#0$1", { group: true, total: 1, heardHere: true })).toEqual([
        "x|b",
        "1|1|0",
      ]);
      expect(await b.ackNext("t", "x")).toBeNull();
      await b.push("r2#0$1|c");
      await b.claim("t");
      // None left: '' for the empty result (the key is finished as usual).
      const b2 = await runScript(
        redis,
        ACK_NEXT,
        [b.k.own, b.k.q, b.k.sched, b.k.att, b.k.ready, `${b.k.group.slice(0, -2)}r2`],
        ["t", "r2#0$1", "k", 5000, Date.now(), "ok", 60, b.k.channel, "r2", 0, 1000, 1, 1],
      );
      expect(b2).toEqual(["", "1|1|0"]);
      expect(await redis.exists(b.k.own)).toBe(0);
      await new Promise((r) => setTimeout(r, 50));
      expect(heard).toEqual([]);
      expect(await redis.get(b.k.group)).toBe("1|1|0");
    } finally {
      sub.disconnect();
    }
  });

  it("a last item that fails counts itself before it settles the group", async () => {
    const b = box();
    await b.push("r1#0$1|a");
    await b.claim("t");
    await b.ackNext("t", "r1#0$1", { group: true, failed: true, total: 1 });
    expect(await redis.get(b.k.group)).toBe("1|0|1");
  });
});
