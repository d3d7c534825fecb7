// Steering's races, on one runner with real Redis and a real session store: a transcript write that fails
// after its line landed, and a frozen attempt (held at its claim check, as SIGSTOP would hold it) whose run
// is finalized meanwhile; and a stop marked before a run starts (its announcement missed).
import { join } from "node:path";
import type { RunRequest } from "@hub/core";
import {
  FileSessionStore,
  RunRecords,
  SessionActivity,
  SessionAdmission,
  type SessionStore,
  SessionWriters,
  type TranscriptEntry,
} from "@hub/sessions";
import { describe, expect, it } from "vitest";
import { directRequest } from "../../sessions/test/requests.js";
import {
  AgentRunner,
  type AgentTool,
  finalizeInterrupted,
  LeaseLostError,
  type ModelEvent,
  type ModelProvider,
  type ModelRequest,
} from "../src/index.js";
import { keptBlocks, runnerBed, runnerOptions, withAppend } from "./runner-kit.js";

const bed = runnerBed("steer-races");
const { redis, prefix, logger, lane, stateDir } = bed;

const request = (runId: string, body: string, chat: string) => directRequest(runId, chat, body);

// The requests a session's lane holds, in order (its items are "<runId>|<JSON>").
const laneHolds = async (sessionKey: string): Promise<RunRequest[]> =>
  (await redis.lrange(lane.pushKeys(sessionKey).list, 0, -1)).map(
    (item) => JSON.parse(item.slice(item.indexOf("|") + 1)) as RunRequest,
  );

// A model that calls `tool` once (first call), then answers with the last user message it was given.
function model(calls: ModelRequest[]): ModelProvider {
  return {
    id: "fake",
    async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
      calls.push(req);
      req.signal?.throwIfAborted();
      if (calls.length === 1) {
        yield { type: "tool_call", call: { id: "c1", name: "tool", arguments: "{}" } };
        yield { type: "done", stopReason: "tool_calls" };
        return;
      }
      const last = req.messages.filter((m) => m.role === "user").at(-1);
      yield { type: "text", delta: `answer to: ${last?.content}` };
      yield { type: "done", stopReason: "stop" };
    },
  };
}

function world(sessions: SessionStore, toolRun: () => Promise<void>) {
  const runs = new RunRecords(redis, prefix);
  const writers = new SessionWriters(redis, prefix);
  const activity = new SessionActivity(redis, prefix, "steer", { lane });
  const admission = new SessionAdmission(redis, prefix, lane, "steer");
  const sink = keptBlocks();
  const calls: ModelRequest[] = [];
  const tool: AgentTool = {
    spec: { name: "tool", description: "t", parameters: { type: "object", properties: {} } },
    run: async () => {
      await toolRun();
      return "ok";
    },
  };
  const o = runnerOptions(bed, {
    sessions,
    runs,
    writers,
    activity,
    replies: sink,
    provider: model(calls),
    tools: [tool],
  });
  const runner = new AgentRunner(o);
  const steer = (r: RunRequest) => admission.admit(r, { key: `${prefix}:dedupe:${r.runId}`, ttlSeconds: 60 });
  return { runner, runs, writers, activity, sink, calls, steer, o };
}

const userLines = (entries: TranscriptEntry[], runId: string) =>
  entries.filter((e) => e.type === "user" && e.runId === runId).length;

// A step an attempt is held at until let go (as SIGSTOP would hold its process), and when it got there.
function freezePoint(): { hold: () => Promise<void>; reached: Promise<void>; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let reach!: () => void;
  const reached = new Promise<void>((r) => {
    reach = r;
  });
  return {
    hold: async () => {
      reach();
      await released;
    },
    reached,
    release,
  };
}

// Another process finalizes the run meanwhile (stale, or out of attempts), as recovery does: what it hands on
// (what it added to the session's lane).
async function finalizeElsewhere(
  w: ReturnType<typeof world>,
  sessions: SessionStore,
  runId: string,
): Promise<RunRequest[]> {
  const record = (await w.runs.get(runId))!;
  const before = (await laneHolds(record.sessionKey)).length;
  const { runs, activity, writers } = w;
  await finalizeInterrupted({ runs, sessions, activity, writers }, record, logger);
  return (await laneHolds(record.sessionKey)).slice(before);
}

describe("a steered message's write that fails after its line landed", () => {
  it("ends the message with the failed run (its line is in the transcript once) instead of a follow-up", async () => {
    const store = new FileSessionStore(join(stateDir, "a"), logger);
    let failOnce = true;
    // The append of the steered line reaches the disk, and then reports a failure (an unknown outcome:
    // a timeout, a lost answer from Redis, an fsync error).
    const sessions = withAppend(store, async (id, entries, append) => {
      await append(id, entries);
      if (failOnce && entries.some((e) => e.type === "user" && e.runId === "a-s1")) {
        failOnce = false;
        throw new Error("append: connection reset after write");
      }
    });
    const x = request("a-x", "first question", "a");
    const w = world(sessions, async () => {
      expect(await w.steer(request("a-s1", "also this", "a"))).toBe("steered");
    });
    await w.runner.run(x, new AbortController());
    expect(await w.runs.get("a-x")).toMatchObject({ status: "failed" });
    expect(await laneHolds(x.ctx.sessionKey)).toEqual([]);
    expect(await w.runs.get("a-s1")).toMatchObject({ status: "failed" });
    const session = (await store.get(x.ctx.sessionKey))!;
    expect(userLines(await store.read(session.sessionId), "a-s1")).toBe(1);
  });
});

describe("a steered message's write that fails before its line landed", () => {
  it("is followed up once, however often the run's end hands on what it took", async () => {
    const store = new FileSessionStore(join(stateDir, "f"), logger);
    let failOnce = true;
    const sessions = withAppend(store, async (id, entries, append) => {
      if (failOnce && entries.some((e) => e.type === "user" && e.runId === "f-s1")) {
        failOnce = false;
        throw new Error("append: disk full");
      }
      await append(id, entries);
    });
    const x = request("f-x", "first question", "f");
    const key = x.ctx.sessionKey;
    const w = world(sessions, async () => {
      expect(await w.steer(request("f-s1", "also this", "f"))).toBe("steered");
    });
    await w.runner.run(x, new AbortController());
    expect(await w.runs.get("f-x")).toMatchObject({ status: "failed" });
    expect((await laneHolds(key)).map((r) => r.runId)).toEqual(["f-s1"]);
    // The run's item is handed out again (its ack was lost) and found over: its end hands on what it took,
    // and the follow-up it queued already is not queued a second time.
    await w.runner.run(x, new AbortController());
    expect((await laneHolds(key)).map((r) => r.runId)).toEqual(["f-s1"]);
    expect(await w.runs.get("f-s1")).toMatchObject({ status: "queued" });
  });
});

describe("a frozen attempt whose run is finalized meanwhile", () => {
  it("cannot mark the message the finalize handed on as answered: the follow-up answers it", async () => {
    const sessions = new FileSessionStore(join(stateDir, "b"), logger);
    const x = request("b-x", "first question", "b");
    const stop = new AbortController();
    // The attempt freezes right after its take, before its write: held at its claim check until let go.
    const frozen = freezePoint();
    const w = world(sessions, async () => {
      expect(await w.steer(request("b-s1", "also this", "b"))).toBe("steered");
    });
    const assertCurrent = w.writers.assertCurrent.bind(w.writers);
    let checks = 0;
    w.writers.assertCurrent = async (claim) => {
      checks += 1;
      // 1: the tool batch's commit; 2: the steered line's write.
      if (checks === 2) await frozen.hold();
      return assertCurrent(claim);
    };
    const a1 = w.runner.run(x, stop);
    await frozen.reached;
    const requeued = await finalizeElsewhere(w, sessions, "b-x");
    expect(requeued.map((r) => r.runId)).toEqual(["b-s1"]);
    expect(await w.runs.get("b-x")).toMatchObject({ status: "interrupted" });
    // The frozen attempt wakes up before the follow-up begins; its process has lost the lane lease.
    stop.abort(new LeaseLostError());
    frozen.release();
    await a1;
    await w.runner.run(requeued[0]!, new AbortController());
    expect(await w.runs.get("b-s1")).toMatchObject({ status: "completed" });
    expect((await w.runs.get("b-s1"))?.text).not.toBe("(answered in run b-x)");
    expect(w.sink.blocks.some((b) => b.includes("answer to: also this"))).toBe(true);
  });
});

describe("a frozen collect run whose run is finalized meanwhile", () => {
  it("cannot mark a message of its batch that the finalize handed on as answered: the follow-up answers it", async () => {
    const store = new FileSessionStore(join(stateDir, "e"), logger);
    // The collect run freezes at its first write (its writer and user lines), as SIGSTOP would hold it.
    const frozen = freezePoint();
    let holdOnce = true;
    const sessions = withAppend(store, async (id, entries, append) => {
      if (holdOnce && entries.some((e) => e.type === "user" && e.runId === "e-c1")) {
        holdOnce = false;
        await frozen.hold();
      }
      await append(id, entries);
    });
    const w = world(sessions, async () => {});
    const collecting = new SessionAdmission(redis, prefix, lane, "collect");
    const collect = (r: RunRequest) =>
      collecting.admit(r, { key: `${prefix}:dedupe:${r.runId}`, ttlSeconds: 60 });
    const busy = request("e-busy", "busy", "e");
    const key = busy.ctx.sessionKey;
    await w.runs.start("e-busy", key, 60_000);
    await w.activity.begin(key, "e-busy", 60_000);
    // Two messages collected while e-busy runs; e-c1's item (collect: true) is the collect run.
    expect(await collect(request("e-c1", "first", "e"))).toBe("collected");
    expect(await collect(request("e-c2", "second", "e"))).toBe("collected");
    await w.runs.finish("e-busy", { status: "completed", text: "done" });
    const stop = new AbortController();
    const a1 = w.runner.run({ ...request("e-c1", "first", "e"), collect: true }, stop);
    await frozen.reached;
    // Meanwhile, another process finalizes the collect run: nothing of its batch is written yet.
    const requeued = await finalizeElsewhere(w, sessions, "e-c1");
    expect(requeued.map((r) => r.runId)).toEqual(["e-c2"]);
    // The frozen attempt wakes before the follow-up begins; its process has lost the lane lease.
    stop.abort(new LeaseLostError());
    frozen.release();
    await a1;
    await w.runner.run(requeued[0]!, new AbortController());
    expect(await w.runs.get("e-c2")).toMatchObject({ status: "completed" });
    expect((await w.runs.get("e-c2"))?.text).not.toBe("(answered in run e-c1)");
    expect(w.sink.blocks.some((b) => b.includes("answer to: second"))).toBe(true);
  });
});

describe("a run handed out again and found over", () => {
  it("hands on what was steered into it when the step that decided it died before doing so", async () => {
    const sessions = new FileSessionStore(join(stateDir, "c"), logger);
    const w = world(sessions, async () => {});
    const x = request("c-x", "first question", "c");
    const key = x.ctx.sessionKey;
    await w.runs.start("c-x", key, 60_000);
    await w.activity.begin(key, "c-x", 60_000);
    expect(await w.steer(request("c-s1", "also this", "c"))).toBe("steered");
    // A finalize decided the run's outcome and died before it handed on the steered message.
    await w.runs.finish("c-x", { status: "interrupted", error: "interrupted by a restart; not resumed" });
    await w.runner.run(x, new AbortController());
    expect((await laneHolds(key)).map((r) => r.runId)).toEqual(["c-s1"]);
    expect(await w.activity.activeRun(key)).toBeUndefined();
    expect(w.calls).toEqual([]);
  });
});

describe("a stop marked before its run starts, its announcement missed", () => {
  it("stops the run in its first step: aborted, and no answer", async () => {
    const w = world(new FileSessionStore(join(stateDir, "g"), logger), async () => {});
    const x = request("g-x", "hello", "g");
    expect(await w.steer(x)).toBe("queued");
    // The mark alone (as RunControl.stop leaves it when no process heard its announcement).
    await w.runs.markStop("g-x", "aborted");
    await w.runner.run(x, new AbortController());
    expect(await w.runs.get("g-x")).toMatchObject({ status: "aborted" });
    expect(w.sink.blocks.some((b) => b.includes("answer to"))).toBe(false);
  });
});
