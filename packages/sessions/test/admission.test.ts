import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { SessionAdmission, SessionLane } from "../src/index.js";
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
    const monitor = await new Redis(REDIS_URL).monitor();
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
      expect(await admitHere("first", "1")).toBe("queued");
      await waitFor(() => running === 1, "the first run started");
      // The only slot is taken: the next session is woken through the ready list and waits for the slot.
      expect(await admitHere("second", "2")).toBe("queued");
      await new Promise((r) => setTimeout(r, 100));
      expect(ran).toEqual([]);
      release();
      await waitFor(() => ran.length === 2, "both runs");
      expect(ran).toEqual(["first", "second"]);
      expect(most).toBe(1);
      await waitFor(() => woken.length === 1, "one wake-up seen");
      expect(woken).toEqual(["agent:main:telegram:direct:2"]);
    } finally {
      await runner.close();
      await hereLane.close();
      monitor.disconnect();
      await dropPrefix(here);
    }
  });
});
