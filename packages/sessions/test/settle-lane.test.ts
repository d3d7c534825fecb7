import { createLogger, type RunRequest } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import {
  type LaneHandOut,
  type RunBegin,
  RunRecords,
  RunSteps,
  SessionActivity,
  SessionAdmission,
  SessionLane,
  SessionWriters,
} from "../src/index.js";
import { directRequest } from "./requests.js";

const redis = new Redis(REDIS_URL);
const prefixes: string[] = [];
// Runners and lanes a test started, closed after it (last started first).
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});
afterAll(async () => {
  for (const prefix of prefixes) await dropPrefix(prefix);
  redis.disconnect();
});

const SESSION = "agent:main:telegram:direct:5";
const outcome = { status: "completed" as const, stopReason: "end_turn" };

/** A session lane with its run steps, one runner slot, and three messages queued in one session. */
async function laneWithQueuedRuns(name: string, requests: RunRequest[]) {
  const prefix = testPrefix(name);
  prefixes.push(prefix);
  const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger: createLogger({ level: "silent" }) });
  cleanups.push(() => lane.close());
  const runs = new RunRecords(redis, prefix);
  const writers = new SessionWriters(redis, prefix);
  // Run steps as a process has them (each its own record of starts made for its runner).
  const newSteps = () =>
    new RunSteps(redis, runs, writers, new SessionActivity(redis, prefix, "followup", { lane }));
  const steps = newSteps();
  const admission = new SessionAdmission(redis, prefix, lane, "followup");
  for (const request of requests)
    expect(await admission.admit(request, { key: `${prefix}:dedupe:${request.runId}`, ttlSeconds: 60 })).toBe(
      "queued",
    );
  const begin = (runId: string, handOut: Pick<LaneHandOut, "attempt">) =>
    steps.begin({ runId, sessionKey: SESSION, channel: "telegram" }, 30_000, 90_000, handOut.attempt);
  // The lane's ack with the next run's timings, as the runner hands them to settle.
  const laneOf = (handOut: Pick<LaneHandOut, "ackStep">) => ({
    ack: handOut.ackStep(),
    timeoutMs: 30_000,
    activeTtlMs: 90_000,
  });
  // The lane's runner, one slot, closed after the test.
  const run = (handler: Parameters<SessionLane["startRunner"]>[0]) => {
    const runner = lane.startRunner(handler, { maxConcurrentRuns: 1 });
    cleanups.push(() => runner.close());
  };
  return { prefix, runs, steps, newSteps, begin, laneOf, run, list: lane.pushKeys(SESSION).list };
}

describe("RunSteps.settle with the session lane's ack", () => {
  it("acks the run's lane item and begins the session's next plain run in the same step", async () => {
    const command: RunRequest = { ...directRequest("s-3", "5"), command: "new" };
    const t = await laneWithQueuedRuns("settle-lane", [
      directRequest("s-1", "5"),
      directRequest("s-2", "5"),
      command,
    ]);
    const begun = new Map<string, RunBegin>();
    const handedOut: string[] = [];
    const seen = new Map<
      string,
      { list: string[]; next: Record<string, string>; writer: Record<string, string> }
    >();
    t.run(async (request, handOut) => {
      handedOut.push(request.runId);
      if (request.command) return;
      const started = await t.begin(request.runId, handOut);
      begun.set(request.runId, started);
      if (started.kind !== "started") return;
      await t.steps.settle(started.claim, { outcome, attempt: started.attempt }, t.laneOf(handOut));
      // Right after the step, before this handler returns: what the step left.
      const nextId = request.runId === "s-1" ? "s-2" : "s-3";
      seen.set(request.runId, {
        list: (await redis.lrange(t.list, 0, -1)).map((item) => item.split("|")[0] ?? ""),
        next: await redis.hgetall(t.runs.keyOf(nextId)),
        writer: await redis.hgetall(`${t.prefix}:writer:${SESSION}`),
      });
    });
    await waitFor(() => handedOut.includes("s-3"), "the command's hand-out");
    expect(handedOut).toEqual(["s-1", "s-2", "s-3"]);
    const first = begun.get("s-1");
    if (first?.kind !== "started") throw new Error(`s-1 did not start: ${JSON.stringify(first)}`);
    // s-1's item is acked by its settle: s-2 is the lane's head, already running under a claim of its own.
    expect(seen.get("s-1")?.list).toEqual(["s-2", "s-3"]);
    expect(seen.get("s-1")?.next).toMatchObject({ status: "running", attempt: "1", timeoutMs: "30000" });
    // A new generation: above s-1's (at least the time of the claim, see generationBase).
    const generation = Number(seen.get("s-1")?.writer.generation);
    expect(generation).toBeGreaterThan(first.claim.generation);
    expect(seen.get("s-1")?.writer).toMatchObject({ runId: "s-2", active: "s-2" });
    // Its runner's begin is that start (begin.lua on a running record would answer "running"), which
    // says whose claim it followed: s-1's (a kept copy of the session is current only then).
    expect(begun.get("s-2")).toMatchObject({
      kind: "started",
      attempt: 1,
      claim: { runId: "s-2", generation },
      seen: { generation, previousGeneration: first.claim.generation, previousReleased: true },
    });
    // A command is not begun by a settle (its runner never begins it): queued, the claim released.
    expect(seen.get("s-2")?.list).toEqual(["s-3"]);
    expect(seen.get("s-2")?.next).toMatchObject({ status: "queued", attempt: "0" });
    expect(seen.get("s-2")?.writer.runId).toBeUndefined();
    expect(seen.get("s-2")?.writer.active).toBeUndefined();
    await waitFor(async () => (await redis.llen(t.list)) === 0, "the command's ack");
  });

  it("a next request Redis cannot read as JSON (a lone surrogate) is left to its runner; usage counts once", async () => {
    const cut = directRequest("u-2", "5");
    const surrogate: RunRequest = { ...cut, ctx: { ...cut.ctx, body: "half an emoji: \ud83d" } };
    const t = await laneWithQueuedRuns("settle-lane-surrogate", [directRequest("u-1", "5"), surrogate]);
    const begun = new Map<string, RunBegin>();
    t.run(async (request, handOut) => {
      const started = await t.begin(request.runId, handOut);
      begun.set(request.runId, started);
      if (started.kind !== "started" || request.runId !== "u-1") return;
      const usage = { inputTokens: 3, outputTokens: 4 };
      await t.steps.settle(started.claim, { outcome, attempt: 1, usage }, t.laneOf(handOut));
    });
    await waitFor(() => begun.has("u-2"), "u-2's hand-out");
    // Not begun by the settle, so its runner's begin started it itself.
    expect(begun.get("u-2")).toMatchObject({
      kind: "started",
      attempt: 1,
      seen: { previousReleased: true },
    });
    expect(await redis.hgetall(`${t.prefix}:usage:${SESSION}`)).toEqual({ input: "3", output: "4" });
  });

  it("a start made in a hand-out's step holds only for the lane's first hand-out of that run", async () => {
    const t = await laneWithQueuedRuns("settle-lane-again", [
      directRequest("r-1", "5"),
      directRequest("r-2", "5"),
    ]);
    const begun = new Map<string, RunBegin>();
    t.run(async (request, handOut) => {
      const started = await t.begin(request.runId, handOut);
      begun.set(request.runId, started);
      if (started.kind !== "started" || request.runId !== "r-1") return;
      await t.steps.settle(started.claim, { outcome, attempt: 1 }, t.laneOf(handOut));
      // As if the lane handed r-2 out again (a drainer lost it first): the start made here is not taken.
      begun.set("r-2 again", await t.begin("r-2", { attempt: 2 }));
    });
    await waitFor(() => begun.has("r-2"), "r-2's hand-out");
    expect(begun.get("r-2 again")).toEqual({ kind: "running", stop: undefined });
    expect(begun.get("r-2")).toEqual({ kind: "running", stop: undefined });
  });

  it("a settle retried after its first answer was lost tells the next run's start again", async () => {
    const t = await laneWithQueuedRuns("settle-lane-retry", [
      directRequest("t-1", "5"),
      directRequest("t-2", "5"),
    ]);
    // The process as it is once the first answer was lost: it never heard of the start that step made.
    const unaware = t.newSteps();
    const begun = new Map<string, RunBegin>();
    let retried: { decided: boolean } | undefined;
    t.run(async (request, handOut) => {
      const steps = request.runId === "t-1" ? t.steps : unaware;
      const run = { runId: request.runId, sessionKey: SESSION, channel: "telegram" };
      const started = await steps.begin(run, 30_000, 90_000, handOut.attempt);
      begun.set(request.runId, started);
      if (started.kind !== "started" || request.runId !== "t-1") return;
      // One outcome (its endedAt fixed), as withRetries sends the same step again when an answer was lost.
      const end = {
        outcome: { ...outcome, endedAt: Date.now() },
        attempt: 1,
        usage: { inputTokens: 2, outputTokens: 5 },
      };
      await t.steps.settle(started.claim, end, t.laneOf(handOut));
      retried = await unaware.settle(started.claim, end, t.laneOf(handOut));
    });
    await waitFor(() => begun.has("t-2"), "t-2's hand-out");
    const first = begun.get("t-1");
    if (first?.kind !== "started") throw new Error("t-1 did not start");
    // Started as begun by the first execution: attempt 1 under the next generation, not a resume.
    const second = begun.get("t-2");
    expect(second).toMatchObject({ kind: "started", attempt: 1, claim: { runId: "t-2" } });
    expect(second?.kind === "started" && second.claim.generation).toBeGreaterThan(first.claim.generation);
    expect(await redis.hmget(t.runs.keyOf("t-2"), "status", "attempt")).toEqual(["running", "1"]);
    // The retry says the outcome was decided (its end is announced) and adds the usage no second time.
    expect(retried?.decided).toBe(true);
    expect(await redis.hgetall(`${t.prefix}:usage:${SESSION}`)).toEqual({ input: "2", output: "5" });
  });

  it("a settle retried after its first answer was lost hands on the messages steered in late again", async () => {
    const prefix = testPrefix("settle-steered-retry");
    prefixes.push(prefix);
    const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger: createLogger({ level: "silent" }) });
    cleanups.push(() => lane.close());
    const runs = new RunRecords(redis, prefix);
    const writers = new SessionWriters(redis, prefix);
    const activity = new SessionActivity(redis, prefix, "steer", { lane });
    const admission = new SessionAdmission(redis, prefix, lane, "steer");
    const admit = (runId: string) =>
      admission.admit(directRequest(runId, "5"), { key: `${prefix}:dedupe:${runId}`, ttlSeconds: 60 });
    expect(await admit("r-1")).toBe("queued");
    const steps = new RunSteps(redis, runs, writers, activity);
    const started = await steps.begin({ runId: "r-1", sessionKey: SESSION }, 30_000, 90_000);
    if (started.kind !== "started") throw new Error("r-1 did not start");
    // Steered in after the run's last boundary: the settle hands it on to run next.
    expect(await admit("r-2")).toBe("steered");
    const end = { outcome: { ...outcome, endedAt: Date.now() }, attempt: 1 };
    // The first execution's answer never arrives (here: its process stops before it hands anything on).
    class AnswerLost extends SessionActivity {
      override async end(): Promise<void> {
        throw new Error("the answer was lost");
      }
    }
    const lost = new RunSteps(redis, runs, writers, new AnswerLost(redis, prefix, "steer", { lane }));
    await expect(lost.settle(started.claim, end)).rejects.toThrow("the answer was lost");
    // Set aside for the retry as long as the steer list kept it (r-2's record's TTL, days), not a day.
    expect(await redis.ttl(`${prefix}:steer:r-1:settled`)).toBeGreaterThan(6 * 24 * 3600);
    // The step again, as withRetries sends it, from a process that never heard the first answer.
    const retried = await new RunSteps(redis, runs, writers, activity).settle(started.claim, end);
    expect(retried.decided).toBe(true);
    // r-1's own item (no lane ack was given here), then r-2, handed on by the retry.
    const queued = await redis.lrange(lane.pushKeys(SESSION).list, 0, -1);
    expect(queued.map((item) => item.split("|")[0])).toEqual(["r-1", "r-2"]);
  });

  it("a lane lease taken meanwhile: the outcome is decided, nothing is acked and no next run begun", async () => {
    const t = await laneWithQueuedRuns("settle-lane-lost", [
      directRequest("l-1", "5"),
      directRequest("l-2", "5"),
    ]);
    let decided: boolean | undefined;
    t.run(async (request, handOut) => {
      const started = await t.begin(request.runId, handOut);
      if (started.kind !== "started" || request.runId !== "l-1") return;
      // Another process took the session's lane (this one was frozen past its lease).
      await redis.set(`${t.prefix}:mb:runs:own:${SESSION}`, "another-process");
      const lane = t.laneOf(handOut);
      ({ decided } = await t.steps.settle(started.claim, { outcome, attempt: 1 }, lane));
    });
    await waitFor(() => decided !== undefined, "l-1's settle");
    expect(decided).toBe(true);
    expect(await redis.hget(t.runs.keyOf("l-1"), "status")).toBe("completed");
    expect((await redis.lrange(t.list, 0, -1)).map((item) => item.split("|")[0])).toEqual(["l-1", "l-2"]);
    expect(await redis.hget(t.runs.keyOf("l-2"), "status")).toBe("queued");
  });
});
