import { createLogger } from "@hub/core";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { SessionLane } from "../src/index.js";
import { directRequest } from "./requests.js";

const prefix = testPrefix("lane");
const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger: createLogger({ level: "silent" }) });
afterAll(async () => {
  await lane.close();
  await dropPrefix(prefix);
});

const request = directRequest;

describe("SessionLane", () => {
  it("a session that keeps getting messages lets a waiting session run after four of its runs", async () => {
    const ran: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const runner = lane.startRunner(
      async (r) => {
        if (r.runId === "busy-0") await gate;
        ran.push(r.runId);
      },
      { maxConcurrentRuns: 1 },
    );
    for (let n = 0; n < 7; n++) await lane.enqueue(request(`busy-${n}`, "1"));
    await waitFor(() => lane.isBusy("agent:main:telegram:direct:1"), "the busy session running");
    // The only slot is taken: the other session waits for it.
    await lane.enqueue(request("other-0", "2"));
    release();
    await waitFor(() => ran.length === 8, "every run");
    await runner.close();
    expect(ran).toEqual(["busy-0", "busy-1", "busy-2", "busy-3", "other-0", "busy-4", "busy-5", "busy-6"]);
  });
});
