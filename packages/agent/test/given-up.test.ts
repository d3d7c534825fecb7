import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@hub/core";
import { FileSessionStore, RunRecords, SessionWriters } from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { directRequest } from "../../sessions/test/requests.js";
import { endGivenUpRun } from "../src/index.js";
import { keptBlocks } from "./runner-kit.js";

const redis = new Redis(REDIS_URL);
const prefix = testPrefix("given-up");
const logger = createLogger({ level: "silent" });
const stateDir = mkdtempSync(join(tmpdir(), "hub-given-up-"));
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
  rmSync(stateDir, { recursive: true, force: true });
});

describe("endGivenUpRun", () => {
  it("tells the chat a given-up run failed, but says nothing for a message kept only as context", async () => {
    const runs = new RunRecords(redis, prefix);
    const replies = keptBlocks();
    const published: string[] = [];
    const deps = {
      runs,
      sessions: new FileSessionStore(stateDir, logger),
      writers: new SessionWriters(redis, prefix),
      replies,
      events: { publish: async (e: { runId: string }) => void published.push(e.runId) },
    };
    const told = directRequest("given-up-1", "31");
    const context = { ...directRequest("given-up-2", "32"), contextOnly: true };
    // Each left running by its last attempt.
    for (const r of [told, context]) await runs.start(r.runId, r.ctx.sessionKey, 60_000);
    await endGivenUpRun(deps, told, logger);
    await endGivenUpRun(deps, context, logger);
    expect(replies.blocks).toEqual([
      "Sorry, I could not answer because of an internal error. The operator can find details in the hub's log.",
    ]);
    expect(published).toEqual(["given-up-1", "given-up-2"]);
    for (const runId of ["given-up-1", "given-up-2"])
      expect(await runs.get(runId)).toMatchObject({ status: "failed", stopReason: "internal_error" });
  });
});
