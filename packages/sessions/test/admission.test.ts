import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
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
});
