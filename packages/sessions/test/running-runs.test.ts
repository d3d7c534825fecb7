import { createLogger } from "@hub/core";
import { type Command, Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { RunRecords, SessionLane } from "../src/index.js";
import { directRequest } from "./requests.js";

const redis = new Redis(REDIS_URL);
const prefix = testPrefix("running-runs");
const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger: createLogger({ level: "silent" }) });
const runs = new RunRecords(redis, prefix);
afterAll(async () => {
  await lane.close();
  await dropPrefix(prefix);
  redis.disconnect();
});

const runningIds = async () => (await runs.running()).map((r) => r.runId).sort();

describe("RunRecords.running", () => {
  it("finds the runs at their session lanes' heads and the runs started outside any lane, until they end", async () => {
    // Two sessions' lanes (no runner here): their heads are the runs in flight once started.
    const a = directRequest("lane-a", "1");
    await lane.enqueue(a);
    await lane.enqueue(directRequest("lane-a2", "1"));
    await lane.enqueue(directRequest("lane-b", "2"));
    await runs.start("lane-a", a.ctx.sessionKey, 60_000);
    // lane-a2 waits behind lane-a in its session's lane; lane-b's record was never started.
    // A command answered at admission: no lane item of its own.
    await runs.start("direct", a.ctx.sessionKey, 60_000, "telegram", { outsideLane: true });
    expect(await runningIds()).toEqual(["direct", "lane-a"]);
    expect(await runs.finish("direct", { status: "completed", text: "done" })).toBe(true);
    expect(await runningIds()).toEqual(["lane-a"]);
    expect(await redis.scard(`${prefix}:runs:outside-lane`)).toBe(0);
  });

  it("drops members of the outside-lane set whose record is gone or no longer running", async () => {
    const key = `${prefix}:runs:outside-lane`;
    await runs.start("outside-live", "agent:main:telegram:direct:9", 60_000, "telegram", {
      outsideLane: true,
    });
    // A record that expired (or a process that died between the end and the set's update).
    await redis.sadd(key, "outside-gone");
    expect((await runs.runningByPlace()).outsideLanes.map((r) => r.runId)).toEqual(["outside-live"]);
    expect((await redis.smembers(key)).sort()).toEqual(["outside-live"]);
    await runs.finish("outside-live", { status: "completed", text: "ok" });
  });
});

describe("RunRecords.finish", () => {
  it("retried after its first answer was lost says it decided; another call's outcome, even the same, is not its own", async () => {
    await runs.start("fin-1", "agent:main:telegram:direct:8", 60_000);
    const outcome = { status: "failed" as const, error: "boom", endedAt: Date.now() };
    let answers = 0;
    // The first answer lost on the way back: the step is sent again, as withRetries does. (Scripts go
    // out as a Command of their own: runScript's `sendCommand`.)
    // Connected first: a command sent before that is queued, and sent again through `sendCommand`.
    const lost = new Redis(REDIS_URL);
    await lost.ping();
    const original = lost.sendCommand.bind(lost);
    lost.sendCommand = (async (command: Command) => {
      const answer = await original(command);
      if (command.name === "evalsha" && answers++ === 0) throw new Error("connection lost before the answer");
      return answer;
    }) as typeof lost.sendCommand;
    try {
      expect(await new RunRecords(lost, prefix).finish("fin-1", outcome)).toBe(true);
    } finally {
      lost.disconnect();
    }
    expect(answers).toBe(2);
    // Another caller with the very same outcome (two finalizers in one millisecond) did not decide it.
    expect(await runs.finish("fin-1", outcome)).toBe(false);
    expect(await runs.get("fin-1")).toMatchObject({ status: "failed", error: "boom" });
  });
});

describe("RunRecords.recordAfterDataLoss", () => {
  it("writes the record whole again, with the sender a client-keyed run's record keeps and none for a platform's", async () => {
    const error = "the hub's Redis lost its data while this message was being answered";
    const outcome = { status: "failed" as const, error };
    // The records are gone with Redis's data: nothing is there to update.
    expect(await runs.recordAfterDataLoss("client-key-1", "agent:main:main", outcome, "webchat:alice")).toBe(
      true,
    );
    expect(await runs.get("client-key-1")).toMatchObject({
      status: "failed",
      error,
      sender: "webchat:alice",
    });
    expect(await runs.recordAfterDataLoss("platform-run-1", "agent:main:main", outcome)).toBe(true);
    expect(await redis.hexists(`${prefix}:run:platform-run-1`, "sender")).toBe(0);
  });
});
