// The answer's last step is written by the settle, with the outcome, in one append: unchecked when its last
// block's push ended the reply (the push is fenced by the writer claim, later than a check before it would
// be), checked when it did not. One runner with real Redis, a real session store and, where the fence
// matters, the real ReplyDispatcher (no delivery worker: only what is queued counts here).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, type ReplySink, type ReplyStream } from "@hub/core";
import {
  ApprovalStore,
  FileSessionStore,
  openByParts,
  RunRecords,
  RunSteps,
  SessionActivity,
  SessionLane,
  type SessionStore,
  SessionWriters,
  type TranscriptEntry,
  type WriterClaim,
} from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { plainTextDispatcher } from "../../reply/test/dispatcher-kit.js";
import { directRequest } from "../../sessions/test/requests.js";
import { AgentRunner, type ModelEvent, type ModelProvider } from "../src/index.js";

const redis = new Redis(REDIS_URL);
const prefix = testPrefix("answer-write");
const logger = createLogger({ level: "silent" });
const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger });
const dispatcher = plainTextDispatcher(prefix);
const stateDir = mkdtempSync(join(tmpdir(), "hub-answer-write-"));
afterAll(async () => {
  await lane.close();
  await dispatcher.close();
  await dropPrefix(prefix);
  redis.disconnect();
  rmSync(stateDir, { recursive: true, force: true });
});

/** Writer claims whose checks are counted. */
class CountedWriters extends SessionWriters {
  checks = 0;
  override async assertCurrent(claim: WriterClaim): Promise<void> {
    this.checks += 1;
    return super.assertCurrent(claim);
  }
}

// A reply sink that keeps every pushed block and never ends the reply by a push (no fence either).
function unendedReplies(): ReplySink {
  return {
    open(replyId): ReplyStream {
      let ended = false;
      return {
        replyId,
        get ended() {
          return ended;
        },
        async push() {},
        async end() {
          ended = true;
          return 0;
        },
        async settled() {
          return { delivered: 0, failed: 0 } as never;
        },
      };
    },
  };
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

// A store whose appends are kept (what each write carried), the rest straight to `store`.
function recorded(store: SessionStore): SessionStore & { writes: TranscriptEntry[][] } {
  const writes: TranscriptEntry[][] = [];
  return {
    writes,
    get: (k) => store.get(k),
    list: () => store.list(),
    resolve: (k) => store.resolve(k),
    reset: (k) => store.reset(k),
    read: (id) => store.read(id),
    append: async (id, entries) => {
      writes.push(entries);
      await store.append(id, entries);
    },
    open(k, first) {
      return openByParts(this, k, first);
    },
  };
}

function world(dir: string, replies: ReplySink, beforeDone: () => Promise<void> = async () => {}) {
  const store = new FileSessionStore(join(stateDir, dir), logger);
  const sessions = recorded(store);
  const runs = new RunRecords(redis, prefix);
  const writers = new CountedWriters(redis, prefix);
  const activity = new SessionActivity(redis, prefix, "steer", { lane });
  const runner = new AgentRunner({
    agentId: "main",
    sessions,
    runs,
    writers,
    steps: new RunSteps(redis, runs, writers, activity),
    replies,
    events: { publish: async () => {} },
    resolveModel: () => ({ provider: model(beforeDone), model: "m" }),
    modelRef: "fake/m",
    toolsFor: () => ({ tools: [], approvals: {}, approvalTimeoutMs: 1000 }),
    approvals: new ApprovalStore(redis, prefix),
    runTimeoutMs: 60_000,
    logger,
    supersede: async () => {},
    activity,
    workspaceDir: stateDir,
    bootstrapLimits: { perFileChars: 1000, totalChars: 1000 },
    contextWindowTokens: 100_000,
  });
  return { runner, runs, writers, sessions, store };
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
    expect(w.sessions.writes.map(kinds)).toEqual([
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
    const w = world("open", unendedReplies(), () => takeOver(w.store, sessionKey, "open-newer"));
    await w.runner.run(directRequest("open-x", "open", "a question"), new AbortController());
    expect(w.writers.checks).toBe(1);
    expect(await w.runs.get("open-x")).toMatchObject({ status: "superseded" });
    // Its writer line and question only: no answer, and no outcome.
    expect(await linesOf(w.store, sessionKey, "open-x")).toEqual(["writer", "user"]);
  });
});
