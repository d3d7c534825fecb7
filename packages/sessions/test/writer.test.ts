import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import {
  livenessThresholdMs,
  RunRecords,
  recoveryDecision,
  SessionWriters,
  WriterSupersededError,
} from "../src/index.js";

const prefix = testPrefix("writer");
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});
const logger = createLogger({ level: "silent" });
void logger;

describe("SessionWriters", () => {
  it("a run's own writes are always accepted while it holds the claim", async () => {
    const writers = new SessionWriters(redis, prefix);
    const { claim, superseded } = await writers.claim("s1", "sid", "run-a");
    expect(superseded).toBeUndefined();
    for (let i = 0; i < 20; i++) await writers.assertCurrent(claim);
  });

  it("a newer claim supersedes the older run, which can write nothing after", async () => {
    const writers = new SessionWriters(redis, prefix);
    const a = await writers.claim("s2", "sid", "run-a");
    const b = await writers.claim("s2", "sid", "run-b");
    expect(b.superseded).toBe("run-a");
    await expect(writers.assertCurrent(a.claim)).rejects.toBeInstanceOf(WriterSupersededError);
    await writers.assertCurrent(b.claim);
    // The older run's cleanup cannot release its successor's claim.
    expect(await writers.release(a.claim)).toBe(false);
    await writers.assertCurrent(b.claim);
    expect(await writers.release(b.claim)).toBe(true);
  });

  it("two processes claiming at once: exactly one ends up the writer", async () => {
    const clients = [new Redis(REDIS_URL), new Redis(REDIS_URL)];
    try {
      for (let round = 0; round < 20; round++) {
        const key = `race-${round}`;
        const claims = await Promise.all(
          clients.map((c, i) => new SessionWriters(c, prefix).claim(key, "sid", `run-${i}`)),
        );
        const verdicts = await Promise.all(
          claims.map((c, i) =>
            new SessionWriters(clients[i]!, prefix).assertCurrent(c.claim).then(
              () => "writer",
              () => "superseded",
            ),
          ),
        );
        expect(verdicts.filter((v) => v === "writer")).toHaveLength(1);
        expect(claims.filter((c) => c.superseded !== undefined)).toHaveLength(1);
      }
    } finally {
      for (const c of clients) c.disconnect();
    }
  });
});

describe("claim generations", () => {
  it("start above every earlier one after the writer record is gone (Redis lost its data)", async () => {
    const writers = new SessionWriters(redis, prefix);
    const before: number[] = [];
    for (let round = 0; round < 5; round++) {
      const { claim } = await writers.claim("gone", "sid", `run-${round}`);
      // Each claim after the record is gone starts anew: it must still be above every one before it,
      // or readers would take the new writer's claim line for a late one (see VisibleLines).
      expect(claim.generation).toBeGreaterThan(Math.max(0, ...before));
      before.push((await writers.claim("gone", "sid", `run-${round}-next`)).claim.generation);
      await redis.del(writers.keyOf("gone"));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  });

  it("stay above every earlier one after Redis came back with older data (the record rolled back)", async () => {
    const writers = new SessionWriters(redis, prefix);
    const taken: number[] = [];
    for (let i = 0; i < 3; i++)
      taken.push((await writers.claim("rolled", "sid", `run-${i}`)).claim.generation);
    // A restored snapshot, or the last second an AOF had not written: the record as after the first claim.
    await redis.hset(writers.keyOf("rolled"), "runId", "run-0", "generation", String(taken[0]));
    // Claims in one millisecond run ahead of the clock by one each; a Redis coming back takes far longer.
    while (Date.now() <= Math.max(...taken)) await new Promise((resolve) => setTimeout(resolve, 1));
    const after = (await writers.claim("rolled", "sid", "run-3")).claim.generation;
    expect(after).toBeGreaterThan(Math.max(...taken));
  });

  it("one from a random base (an older version's) moves up to the time at the session's next claim", async () => {
    const writers = new SessionWriters(redis, prefix);
    await redis.hset(writers.keyOf("legacy"), "runId", "old-run", "generation", "123456789");
    const before = Date.now();
    const first = (await writers.claim("legacy", "sid", "run-a")).claim.generation;
    expect(first).toBeGreaterThanOrEqual(before);
    expect(first).toBeLessThanOrEqual(Date.now());
    expect((await writers.claim("legacy", "sid", "run-b")).claim.generation).toBeGreaterThan(first);
  });

  it("a claim taken again for its run gets a newer generation; for another run, none", async () => {
    const writers = new SessionWriters(redis, prefix);
    const { claim } = await writers.claim("again", "sid", "run-a");
    expect(await writers.reclaimFor("again", "run-a")).toBeGreaterThan(claim.generation);
    expect(await writers.reclaimFor("again", "run-b")).toBeUndefined();
    await expect(writers.assertCurrent(claim)).rejects.toBeInstanceOf(WriterSupersededError);
  });
});

describe("run records and liveness", () => {
  it("a terminal outcome is decided once; late writes and older attempts cannot change it", async () => {
    const runs = new RunRecords(redis, prefix);
    expect(await runs.start("r1", "s", 1000)).toBe(1);
    expect(await runs.start("r1", "s", 1000)).toBe(2);
    expect(await runs.finish("r1", { status: "failed" }, 1)).toBe(false);
    expect(await runs.finish("r1", { status: "completed", text: "ok" }, 2)).toBe(true);
    expect(await runs.finish("r1", { status: "failed" })).toBe(false);
    expect(await runs.start("r1", "s", 1000)).toBe(0);
    expect(await runs.get("r1")).toMatchObject({ status: "completed", text: "ok", attempt: 2 });
    expect((await runs.running()).map((r) => r.runId)).not.toContain("r1");
  });

  it("liveness is max(2 h, run timeout + 60 s); stale or out of attempts is finalized", () => {
    expect(livenessThresholdMs(600_000)).toBe(2 * 3600_000);
    expect(livenessThresholdMs(3 * 3600_000)).toBe(3 * 3600_000 + 60_000);
    const now = 10 * 3600_000;
    expect(recoveryDecision({ startedAt: now - 55_000, attempt: 1 }, now, 600_000)).toBe("resume");
    expect(recoveryDecision({ startedAt: now - 6 * 3600_000, attempt: 1 }, now, 600_000)).toBe("finalize");
    expect(recoveryDecision({ startedAt: now - 55_000, attempt: 3 }, now, 600_000)).toBe("finalize");
    expect(
      recoveryDecision(
        { startedAt: now - 2.5 * 3600_000, attempt: 1, timeoutMs: 3 * 3600_000 },
        now,
        600_000,
      ),
    ).toBe("resume");
  });
});
