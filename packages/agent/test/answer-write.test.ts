// The answer's last step is written by the settle, with the outcome, in one append: unchecked when its last
// block's push ended the reply (the push is fenced by the writer claim, later than a check before it would
// be), checked when it did not. One runner with real Redis, a real session store and, where the fence
// matters, the real ReplyDispatcher (no delivery worker: only what is queued counts here).
import { join } from "node:path";
import type { ReplySink } from "@hub/core";
import {
  FileSessionStore,
  RunRecords,
  SessionActivity,
  SessionWriters,
  type TranscriptEntry,
  type WriterClaim,
} from "@hub/sessions";
import { afterAll, describe, expect, it } from "vitest";
import { plainTextDispatcher } from "../../reply/test/dispatcher-kit.js";
import { directRequest } from "../../sessions/test/requests.js";
import { AgentRunner, type ModelEvent, type ModelProvider } from "../src/index.js";
import { keptBlocks, runnerBed, runnerOptions, withAppend } from "./runner-kit.js";

const bed = runnerBed("answer-write");
const { redis, prefix, logger, lane, stateDir } = bed;
const dispatcher = plainTextDispatcher(prefix);
afterAll(() => dispatcher.close());

/** Writer claims whose checks are counted. */
class CountedWriters extends SessionWriters {
  checks = 0;
  override async assertCurrent(claim: WriterClaim): Promise<void> {
    this.checks += 1;
    return super.assertCurrent(claim);
  }
}

// A model that answers in one step; `beforeDone` runs after its text, before the step ends.
function model(beforeDone: () => Promise<void>): ModelProvider {
  return {
    id: "fake",
    async *stream(): AsyncIterable<ModelEvent> {
      yield { type: "text", delta: "The answer." };
      await beforeDone();
      yield { type: "done", stopReason: "stop" };
    },
  };
}

function world(dir: string, replies: ReplySink, beforeDone: () => Promise<void> = async () => {}) {
  const store = new FileSessionStore(join(stateDir, dir), logger);
  // Each append's lines, in order.
  const writes: TranscriptEntry[][] = [];
  const sessions = withAppend(store, async (id, entries, append) => {
    writes.push(entries);
    await append(id, entries);
  });
  const runs = new RunRecords(redis, prefix);
  const writers = new CountedWriters(redis, prefix);
  const activity = new SessionActivity(redis, prefix, "steer", { lane });
  const parts = { sessions, runs, writers, activity, replies, provider: model(beforeDone), tools: [] };
  return { runner: new AgentRunner(runnerOptions(bed, parts)), runs, writers, writes, store };
}

const kinds = (entries: TranscriptEntry[]) => entries.map((e) => e.type);

// Claims the session of `key` for another run, as a takeover by another process would.
async function takeOver(store: FileSessionStore, sessionKey: string, runId: string): Promise<void> {
  const session = (await store.get(sessionKey))!;
  await new SessionWriters(redis, prefix).claim(sessionKey, session.sessionId, runId);
}

// The transcript lines of `runId`, by kind.
async function linesOf(store: FileSessionStore, sessionKey: string, runId: string): Promise<string[]> {
  const session = (await store.get(sessionKey))!;
  return kinds((await store.read(session.sessionId)).filter((e) => "runId" in e && e.runId === runId));
}

describe("the answer's transcript write", () => {
  it("goes with the outcome in one append, with no claim check, when its last block's push ended the reply", async () => {
    const w = world("ended", dispatcher);
    await w.runner.run(directRequest("ended-x", "ended", "a question"), new AbortController());
    expect(await w.runs.get("ended-x")).toMatchObject({ status: "completed" });
    // The run's writer line with the user's, then the answer with the outcome.
    expect(w.writes.map(kinds)).toEqual([
      ["writer", "user"],
      ["assistant", "outcome"],
    ]);
    expect(w.writers.checks).toBe(0);
  });

  it("a newer claim before the last block's push: the fence refuses it, nothing of the answer is written", async () => {
    const sessionKey = directRequest("fenced-x", "fenced", "q").ctx.sessionKey;
    const w = world("fenced", dispatcher, () => takeOver(w.store, sessionKey, "fenced-newer"));
    await w.runner.run(directRequest("fenced-x", "fenced", "a question"), new AbortController());
    expect(await w.runs.get("fenced-x")).toMatchObject({ status: "superseded" });
    expect(await linesOf(w.store, sessionKey, "fenced-x")).toEqual(["writer", "user"]);
  });

  it("is checked first when no push ended the reply: a newer claim ends the run as superseded, unwritten", async () => {
    const sessionKey = directRequest("open-x", "open", "q").ctx.sessionKey;
    const w = world("open", keptBlocks(), () => takeOver(w.store, sessionKey, "open-newer"));
    await w.runner.run(directRequest("open-x", "open", "a question"), new AbortController());
    expect(w.writers.checks).toBe(1);
    expect(await w.runs.get("open-x")).toMatchObject({ status: "superseded" });
    // Its writer line and question only: no answer, and no outcome.
    expect(await linesOf(w.store, sessionKey, "open-x")).toEqual(["writer", "user"]);
  });
});
