// A run its lane hands out again after restart recovery could not look at it (its session was busy then):
// the runner itself finds it stale or out of attempts, finalizes it without a model call, and tells its
// user once. Real Redis, real session store; the reply sink keeps what is pushed.
import { join } from "node:path";
import type { ChatEvent } from "@hub/core";
import { FileSessionStore, RunRecords, SessionActivity, SessionWriters } from "@hub/sessions";
import { describe, expect, it } from "vitest";
import { directRequest } from "../../sessions/test/requests.js";
import { AgentRunner, type ModelEvent, type ModelProvider } from "../src/index.js";
import { keptBlocks, runnerBed, runnerOptions } from "./runner-kit.js";

const bed = runnerBed("resume-finalized");
const { redis, prefix, logger, lane, stateDir } = bed;

/** A model that never answers (the attempt it serves is the one a crash ends), counting its calls. */
function hangingModel(): ModelProvider & { calls: number } {
  return {
    id: "fake",
    calls: 0,
    async *stream(): AsyncIterable<ModelEvent> {
      this.calls += 1;
      await new Promise(() => {});
    },
  };
}

function world(provider: ModelProvider) {
  const sessions = new FileSessionStore(join(stateDir, "sessions"), logger);
  const runs = new RunRecords(redis, prefix);
  const writers = new SessionWriters(redis, prefix);
  const activity = new SessionActivity(redis, prefix, "steer", { lane });
  const replies = keptBlocks();
  const events: ChatEvent[] = [];
  const parts = { sessions, runs, writers, activity, replies, provider, tools: [] };
  const options = {
    ...runnerOptions(bed, parts),
    events: { publish: async (e: ChatEvent) => void events.push(e) },
  };
  return { runner: new AgentRunner(options), runs, replies, events };
}

describe("a run the runner finds not to be resumed", () => {
  it.each([
    ["stale (started six hours ago)", "stale-r", { startedAt: Date.now() - 6 * 3600_000 }],
    ["out of attempts", "spent-r", { attempt: 3 }],
  ])(
    "%s is finalized as interrupted, with no model call, and its user is told once",
    async (_, runId, fields) => {
      const model = hangingModel();
      const request = directRequest(runId, runId, "a question");
      // The first attempt's process dies mid-run: its model call never returns.
      void world(model).runner.run(request, new AbortController());
      await expect.poll(() => model.calls).toBe(1);
      await redis.hset(`${prefix}:run:${runId}`, fields);
      const next = world(model);
      await next.runner.run(request, new AbortController());
      expect(model.calls).toBe(1);
      expect(await next.runs.get(runId)).toMatchObject({ status: "interrupted" });
      expect(next.replies.blocks).toEqual([
        "Sorry, I could not finish answering this: I was restarted while working on it. Please send it again.",
      ]);
      expect(next.events).toMatchObject([{ runId, state: "error" }]);
      // Handed out once more (the lane's item outlived a crash): over, it says nothing again.
      await next.runner.run(request, new AbortController());
      expect(next.replies.blocks).toHaveLength(1);
    },
  );
});
