import { createLogger, runIdForMessage } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { monitorRedis } from "../../../test/support/monitor.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import {
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
const prefix = testPrefix("admission");
const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger: createLogger({ level: "silent" }) });
const admission = new SessionAdmission(redis, prefix, lane, "followup");
afterAll(async () => {
  await lane.close();
  await dropPrefix(prefix);
  redis.disconnect();
});

const request = directRequest;

const admit = (runId: string, peer: string) =>
  admission.admit(request(runId, peer), { key: `${prefix}:dedupe:${runId}`, ttlSeconds: 60 });

describe("SessionAdmission", () => {
  it("keeps the sender in the run record only where a client chose the runId (its idempotency key)", async () => {
    const own = testPrefix("admission-sender");
    const ownLane = new SessionLane({
      redisUrl: REDIS_URL,
      prefix: own,
      logger: createLogger({ level: "silent" }),
    });
    const ownAdmission = new SessionAdmission(redis, own, ownLane, "followup");
    const admitHere = (runId: string) =>
      ownAdmission.admit(request(runId, "41"), { key: `${own}:dedupe:${runId}`, ttlSeconds: 60 });
    const platform = runIdForMessage("telegram:default:41:1");
    expect(await admitHere(platform)).toBe("queued");
    expect(await admitHere("client-key-1")).toBe("queued");
    const runs = new RunRecords(redis, own);
    // A platform message's run is never asked for by key: its record grows by nothing.
    expect((await runs.get(platform))?.sender).toBeUndefined();
    expect((await runs.get("client-key-1"))?.sender).toBe("telegram:41");
    await ownLane.close();
    await dropPrefix(own);
  });

  it("wakes the session's runner in the admission's own step, once while a drain is owed", async () => {
    const { ready, sched, list } = lane.pushKeys("agent:main:telegram:direct:7");
    expect(await admit("run-1", "7")).toBe("queued");
    // No runner is started here: the session is on the ready list because the admission put it there.
    expect(await redis.lrange(ready, 0, -1)).toEqual(["agent:main:telegram:direct:7"]);
    expect(await redis.zscore(sched, "agent:main:telegram:direct:7")).not.toBeNull();
    expect(await admit("run-2", "7")).toBe("queued");
    expect(await admit("run-2", "7")).toBe("duplicate");
    // Owed already: the second message rides on the first wake-up.
    expect(await redis.lrange(ready, 0, -1)).toEqual(["agent:main:telegram:direct:7"]);
    expect((await redis.lrange(list, 0, -1)).map((item) => item.split("|")[0])).toEqual(["run-1", "run-2"]);
    expect(await admit("run-3", "8")).toBe("queued");
    expect(await redis.lrange(ready, 0, -1)).toEqual([
      "agent:main:telegram:direct:7",
      "agent:main:telegram:direct:8",
    ]);
  });

  it("a runner of this process takes an idle session in the admission's own step, never past its slots", async () => {
    const here = testPrefix("admission-here");
    const hereLane = new SessionLane({
      redisUrl: REDIS_URL,
      prefix: here,
      logger: createLogger({ level: "silent" }),
    });
    const hereAdmission = new SessionAdmission(redis, here, hereLane, "followup");
    const { ready } = hereLane.pushKeys("agent:main:telegram:direct:1");
    // Every write to the lane's ready list, seen by Redis itself.
    const monitor = await monitorRedis();
    const woken: string[] = [];
    monitor.on("monitor", (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === "rpush" && args[1] === ready) woken.push(String(args[2]));
    });
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const ran: string[] = [];
    let running = 0;
    let most = 0;
    const runner = hereLane.startRunner(
      async (r) => {
        most = Math.max(most, ++running);
        if (r.runId === "first") await gate;
        ran.push(r.runId);
        running--;
      },
      { maxConcurrentRuns: 1 },
    );
    try {
      const admitHere = (runId: string, peer: string) =>
        hereAdmission.admit(request(runId, peer), { key: `${here}:dedupe:${runId}`, ttlSeconds: 60 });
      // A quick run first: a session waits for a slot only where runs have shown how soon slots free up.
      expect(await admitHere("quick", "9")).toBe("queued");
      await waitFor(() => ran.length === 1, "the quick run");
      await waitFor(
        async () => !(await hereLane.isBusy("agent:main:telegram:direct:9")),
        "the quick run's end",
      );
      await new Promise((r) => setTimeout(r, 50));
      ran.length = 0;
      expect(await admitHere("first", "1")).toBe("queued");
      await waitFor(() => running === 1, "the first run started");
      // The only slot is taken: the next sessions are claimed to wait here for it (no wake-up), in order.
      expect(await admitHere("second", "2")).toBe("queued");
      expect(await admitHere("third", "3")).toBe("queued");
      await new Promise((r) => setTimeout(r, 100));
      expect(ran).toEqual([]);
      release();
      await waitFor(() => ran.length === 3, "the three runs");
      expect(ran).toEqual(["first", "second", "third"]);
      expect(most).toBe(1);
      // No session went through the ready list (a wake-up would have been seen by now).
      await new Promise((r) => setTimeout(r, 100));
      expect(woken).toEqual([]);
    } finally {
      await runner.close();
      await hereLane.close();
      monitor.disconnect();
      await dropPrefix(here);
    }
  });

  it("a run its runner takes in the admission's step is begun there: the runner's begin is that start", async () => {
    const here = testPrefix("admission-begin");
    const hereLane = new SessionLane({
      redisUrl: REDIS_URL,
      prefix: here,
      logger: createLogger({ level: "silent" }),
    });
    const runs = new RunRecords(redis, here);
    const writers = new SessionWriters(redis, here);
    const steps = new RunSteps(
      redis,
      runs,
      writers,
      new SessionActivity(redis, here, "followup", { lane: hereLane }),
    );
    const hereAdmission = new SessionAdmission(redis, here, hereLane, "followup", {
      steps,
      timeoutMs: 30_000,
      activeTtlMs: 90_000,
    });
    // Every script Redis runs on a run record, seen by Redis itself: begin.lua must not run for the run begun
    // here. The admission's own script is left out: MONITOR may report it after the runner took the run.
    const monitor = await monitorRedis();
    let scripts = 0;
    monitor.on("monitor", (_time: string, args: string[]) => {
      const keys = args.slice(3);
      const admission = keys.some((a) => a.startsWith(`${here}:dedupe:`));
      if (/^eval/i.test(String(args[0])) && keys.some((a) => a.includes(`${here}:run:`)) && !admission)
        scripts++;
    });
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const begun = new Map<string, RunBegin>();
    let firstBeginScripts = -1;
    const runner = hereLane.startRunner(
      async (r) => {
        // As the runner does: its first step is begin.
        const scriptsBefore = scripts;
        begun.set(
          r.runId,
          await steps.begin(
            { runId: r.runId, sessionKey: r.ctx.sessionKey, channel: "telegram" },
            30_000,
            90_000,
          ),
        );
        if (r.runId === "b-first") {
          await new Promise((w) => setTimeout(w, 100));
          firstBeginScripts = scripts - scriptsBefore;
          await gate;
        }
      },
      { maxConcurrentRuns: 1 },
    );
    try {
      const admitHere = (runId: string, peer: string) =>
        hereAdmission.admit(request(runId, peer), { key: `${here}:dedupe:${runId}`, ttlSeconds: 60 });
      const session = "agent:main:telegram:direct:1";
      await writers.touch(session);
      // A generation from an older version's random base: the claim taken here moves it up to the time.
      await redis.hset(`${here}:writer:${session}`, "generation", "123456789");
      const before = Date.now();
      expect(await admitHere("b-first", "1")).toBe("queued");
      // Begun in the admission's step: running, attempt 1, the session's running run and writer claim.
      expect(await redis.hmget(`${here}:run:b-first`, "status", "attempt", "timeoutMs")).toEqual([
        "running",
        "1",
        "30000",
      ]);
      // A run in flight is its session lane's head: the runs read as running include it.
      expect((await runs.running()).map((r) => r.runId)).toEqual(["b-first"]);
      const writer = await redis.hgetall(`${here}:writer:${session}`);
      expect(writer).toMatchObject({ runId: "b-first", active: "b-first", touched: "1" });
      expect(Number(writer.generation)).toBeGreaterThanOrEqual(before);
      await waitFor(() => firstBeginScripts >= 0, "the first run's begin");
      expect(firstBeginScripts).toBe(0);
      expect(begun.get("b-first")).toMatchObject({
        kind: "started",
        attempt: 1,
        claim: { runId: "b-first", sessionKey: session, generation: Number(writer.generation) },
        seen: {
          generation: Number(writer.generation),
          previousGeneration: 123456789,
          previousReleased: true,
          touched: "1",
        },
      });
      // The only slot is taken: this session waits for it, only queued; its runner begins it.
      expect(await admitHere("b-second", "2")).toBe("queued");
      expect(await redis.hget(`${here}:run:b-second`, "status")).toBe("queued");
      release();
      await waitFor(() => begun.has("b-second"), "the second run's begin");
      expect(begun.get("b-second")).toMatchObject({ kind: "started", attempt: 1 });
      expect(await redis.hget(`${here}:run:b-second`, "status")).toBe("running");
    } finally {
      release(); // whatever failed: the gated run must end for the runner to close
      await runner.close();
      await hereLane.close();
      monitor.disconnect();
      await dropPrefix(here);
    }
  });
});
