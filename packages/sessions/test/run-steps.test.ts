import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import {
  RunRecords,
  RunSteps,
  SessionActivity,
  SessionAdmission,
  SessionLane,
  SessionWriters,
} from "../src/index.js";
import { directRequest } from "./requests.js";

const redis = new Redis(REDIS_URL);
const prefix = testPrefix("run-steps");
const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger: createLogger({ level: "silent" }) });
const runs = new RunRecords(redis, prefix);
const activity = new SessionActivity(redis, prefix, "interrupt", { lane });
const steps = new RunSteps(redis, runs, new SessionWriters(redis, prefix), activity);
const admission = new SessionAdmission(redis, prefix, lane, "interrupt");
afterAll(async () => {
  await lane.close();
  await dropPrefix(prefix);
  redis.disconnect();
});

const admit = (runId: string, peer: string) =>
  admission.admit(directRequest(runId, peer), { key: `${prefix}:dedupe:${runId}`, ttlSeconds: 60 });
const begin = (runId: string, peer: string) =>
  steps.begin({ runId, sessionKey: `agent:main:telegram:direct:${peer}` }, 60_000, 60_000);

describe("RunSteps.begin and stop marks", () => {
  it("a stop asked before a run starts is read in its first step", async () => {
    expect(await admit("queued-1", "1")).toBe("queued");
    expect(await runs.markStop("queued-1", "aborted")).toBe(true);
    const begun = await begin("queued-1", "1");
    expect(begun).toMatchObject({ kind: "started", attempt: 1, stop: "aborted" });
  });

  it("a run without a stop starts without one; a stop for an unknown run writes nothing", async () => {
    expect(await admit("plain-1", "2")).toBe("queued");
    expect(await begin("plain-1", "2")).toMatchObject({ kind: "started", stop: undefined });
    expect(await runs.markStop("no-such-run", "aborted")).toBe(false);
    expect(await redis.exists(`${prefix}:run:no-such-run`)).toBe(0);
  });

  it("interrupt mode marks the running run stopped, and a later begin of it (a resume) reads the stop", async () => {
    expect(await admit("first", "3")).toBe("queued");
    expect(await begin("first", "3")).toMatchObject({ kind: "started", stop: undefined });
    // A second message while "first" runs, in interrupt mode: "first" is told to stop.
    expect(await admit("second", "3")).toBe("interrupted");
    // Begun again (as after a crash: the record says running), the step hands the stop to the resume.
    expect(await begin("first", "3")).toEqual({ kind: "running", stop: "aborted" });
  });
});

describe("claim generations in a run's first step", () => {
  it("one from a random base (an older version's) moves up to the time; each later claim's is newer", async () => {
    const writer = `${prefix}:writer:agent:main:telegram:direct:9`;
    await redis.hset(writer, "generation", "123456789");
    const before = Date.now();
    expect(await admit("legacy-1", "9")).toBe("queued");
    const first = await begin("legacy-1", "9");
    if (first.kind !== "started") throw new Error(`not started: ${first.kind}`);
    expect(first.claim.generation).toBeGreaterThanOrEqual(before);
    expect(first.claim.generation).toBeLessThanOrEqual(Date.now());
    await redis.hdel(writer, "active", "activeUntil");
    expect(await admit("legacy-2", "9")).toBe("queued");
    const second = await begin("legacy-2", "9");
    expect(second).toMatchObject({ kind: "started", seen: { previousGeneration: first.claim.generation } });
    expect(second.kind === "started" && second.claim.generation).toBeGreaterThan(first.claim.generation);
  });
});
