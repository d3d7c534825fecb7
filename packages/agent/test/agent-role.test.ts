import { createLogger, type RunRequest } from "@hub/core";
import { RunRecords, SessionLane } from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { directRequest } from "../../sessions/test/requests.js";
import { RunControl, startAgentRole } from "../src/agent-role.js";
import type { AgentRunner } from "../src/runner.js";

const redis = new Redis(REDIS_URL);
const prefix = testPrefix("agent-role");
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

const request = directRequest;

describe("the agent role's stop control", () => {
  it("a stop announced before this process's runner started the run stops it as it starts", async () => {
    const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger: createLogger({ level: "silent" }) });
    const control = new RunControl(redis, prefix, new RunRecords(redis, prefix));
    // What the runner is handed for each run: whether its stop signal was already raised, and why.
    const started = new Map<string, string>();
    const runner = {
      run: async (r: RunRequest, { signal }: AbortController) => {
        started.set(r.runId, signal.aborted ? String((signal.reason as Error).message) : "running");
      },
    } as unknown as AgentRunner;
    const role = await startAgentRole({
      runner,
      lane,
      control,
      redisUrl: REDIS_URL,
      prefix,
      maxConcurrentRuns: 2,
      recover: async () => undefined,
    });
    try {
      // Announced while no process runs it (as for a run admission began in its step, just before its
      // runner starts it): the announcement alone must stop it.
      await control.stop("early-1", "aborted");
      await new Promise((r) => setTimeout(r, 100));
      await lane.enqueue(request("early-1", "1"));
      await lane.enqueue(request("other-1", "2"));
      await waitFor(() => started.size === 2, "both runs started");
      expect(started.get("early-1")).toMatch(/abort/i);
      expect(started.get("other-1")).toBe("running");
    } finally {
      await role.worker.close();
      await role.close();
      await lane.close();
    }
  });
});
