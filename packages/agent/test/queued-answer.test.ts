// A run whose process stopped after its whole reply was queued (the last block's push, which stages the
// answer in its own step) and before its settle: the run is finished from the staged answer, with no second
// model call and no second reply, whether it is resumed or finalized. One process stands in for the dead
// one: its settle's transcript write never returns. Real Redis, real session store, real ReplyDispatcher
// (no delivery worker: only what is queued counts here).
import { join } from "node:path";
import type { ChatEvent, ReplySink } from "@hub/core";
import {
  FileSessionStore,
  RunRecords,
  SessionActivity,
  SessionWriters,
  type TranscriptEntry,
  writerGeneration,
} from "@hub/sessions";
import { afterAll, describe, expect, it } from "vitest";
import { FakeChatAdapter, startFakeChatPlatform } from "../../../test/fakes/src/index.js";
import { waitFor } from "../../../test/support/redis.js";
import { plainTextDispatcher } from "../../reply/test/dispatcher-kit.js";
import { directRequest } from "../../sessions/test/requests.js";
import { AgentRunner, finalizeInterrupted, type ModelEvent, type ModelProvider } from "../src/index.js";
import { runnerBed, runnerOptions, withAppend } from "./runner-kit.js";

const bed = runnerBed("queued-answer");
const { redis, prefix, logger, lane, stateDir } = bed;
const dispatcher = plainTextDispatcher(prefix);
afterAll(() => dispatcher.close());

/** A model that answers `text` in one step, counting its calls. */
function countedModel(text: string): ModelProvider & { calls: number } {
  return {
    id: "fake",
    calls: 0,
    async *stream(): AsyncIterable<ModelEvent> {
      this.calls += 1;
      yield { type: "text", delta: text };
      yield { type: "done", stopReason: "stop", usage: { inputTokens: 5, outputTokens: 3 } };
    },
  };
}

/** A reply sink over the dispatcher that counts the blocks pushed through it. */
function countedPushes(): ReplySink & { pushes: number } {
  const sink = {
    pushes: 0,
    open: (...args: Parameters<ReplySink["open"]>) => {
      const reply = dispatcher.open(...args);
      const push = reply.push.bind(reply);
      reply.push = async (...pushArgs) => {
        sink.pushes += 1;
        return push(...pushArgs);
      };
      return reply;
    },
  };
  return sink;
}

// A runner on `dir`'s sessions; `stopAtSettle`: its settle's write (the answer and outcome) never returns,
// as if the process died there, and `stopped` resolves when it got there.
function world(dir: string, provider: ModelProvider, stopAtSettle: false | "before" | "after" = false) {
  const store = new FileSessionStore(join(stateDir, dir), logger);
  let reached = () => {};
  const stopped = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const sessions = withAppend(store, async (id, entries, append) => {
    const settling = stopAtSettle && entries.some((e) => e.type === "outcome");
    if (settling && stopAtSettle === "after") await append(id, entries);
    if (settling) {
      reached();
      return new Promise(() => {});
    }
    await append(id, entries);
  });
  const runs = new RunRecords(redis, prefix);
  const writers = new SessionWriters(redis, prefix);
  const activity = new SessionActivity(redis, prefix, "steer", { lane });
  const replies = countedPushes();
  const parts = { sessions, runs, writers, activity, replies, provider, tools: [] };
  const events: ChatEvent[] = [];
  const publish = async (event: ChatEvent) => void events.push(event);
  return {
    runner: new AgentRunner({ ...runnerOptions(bed, parts), events: { publish } }),
    events,
    runs,
    writers,
    activity,
    replies,
    store,
    stopped,
  };
}

// The transcript lines of `runId` as [type, writer] (a reader's view: stale writers' lines dropped).
async function linesOf(store: FileSessionStore, sessionKey: string, runId: string) {
  const session = (await store.get(sessionKey))!;
  const lines = await store.read(session.sessionId);
  return lines
    .filter((e): e is Exclude<TranscriptEntry, { type: "session" }> => "runId" in e && e.runId === runId)
    .map((e) => [e.type, "writer" in e ? e.writer : undefined]);
}

// Runs `runId` in a world that stops at its settle, once its whole reply is queued.
async function stoppedAfterQueuing(
  dir: string,
  runId: string,
  answer: string,
  at: "before" | "after" = "before",
  request = directRequest(runId, dir, "a question"),
) {
  const model = countedModel(answer);
  const dead = world(dir, model, at);
  void dead.runner.run(request, new AbortController());
  await dead.stopped;
  return { model, dead };
}

describe("a run stopped between its reply's last push and its settle", () => {
  it("is resumed without a model call: the staged answer is written and settled under the new claim, nothing queued again", async () => {
    const { model, dead } = await stoppedAfterQueuing("resumed", "queued-x", "The answer, queued whole.");
    expect(model.calls).toBe(1);
    expect((await dead.runs.stagedAnswer("queued-x"))?.text).toBe("The answer, queued whole.");
    const next = world("resumed", model);
    // Delivered from here on: the run's end is announced once the dead attempt's reply has settled.
    const platform = await startFakeChatPlatform();
    const worker = dispatcher.startDelivery(() => new FakeChatAdapter("fakechat", platform.url));
    try {
      await next.runner.run(directRequest("queued-x", "resumed", "a question"), new AbortController());
      await waitFor(() => next.events.length > 0, "the run's end announced");
    } finally {
      await worker.close();
      await platform.close();
    }
    expect(model.calls).toBe(1);
    expect(next.replies.pushes).toBe(0);
    expect(platform.messages.map((m) => m.text)).toEqual(["The answer, queued whole."]);
    // Numbered after that reply's one segment, as the dead attempt's own announcement would have been.
    expect(next.events).toMatchObject([{ state: "final", seq: 1, text: "The answer, queued whole." }]);
    expect(await next.runs.get("queued-x")).toMatchObject({ status: "completed", attempt: 2 });
    expect(await next.runs.stagedAnswer("queued-x")).toBeUndefined();
    // The dead attempt's writer line and question, then the resumed attempt's writer line, answer and outcome.
    const sessionKey = directRequest("queued-x", "resumed").ctx.sessionKey;
    const lines = await linesOf(next.store, sessionKey, "queued-x");
    expect(lines.map(([type]) => type)).toEqual(["writer", "user", "writer", "assistant", "outcome"]);
    const [first, , resumed] = lines.map(([, writer]) => writer);
    expect(lines.map(([, writer]) => writer)).toEqual([first, first, resumed, resumed, resumed]);
    expect(resumed).not.toBe(first);
    expect(await redis.hgetall(`${prefix}:usage:${sessionKey}`)).toEqual({ input: "5", output: "3" });
  });

  it("stopped after the settle's transcript write: the resume settles without writing the answer again", async () => {
    const { model } = await stoppedAfterQueuing("written", "written-x", "The answer, written once.", "after");
    const next = world("written", model);
    await next.runner.run(directRequest("written-x", "written", "a question"), new AbortController());
    expect(model.calls).toBe(1);
    expect(await next.runs.get("written-x")).toMatchObject({ status: "completed", attempt: 2 });
    const sessionKey = directRequest("written-x", "written").ctx.sessionKey;
    const lines = await linesOf(next.store, sessionKey, "written-x");
    expect(lines.map(([type]) => type)).toEqual(["writer", "user", "assistant", "outcome", "writer"]);
  });

  it("stopped after the settle's transcript write and finalized: its answer is not written again", async () => {
    const { dead } = await stoppedAfterQueuing("written-f", "written-f", "Written before the stop.", "after");
    const record = (await dead.runs.get("written-f"))!;
    const deps = { runs: dead.runs, sessions: dead.store, activity: dead.activity, writers: dead.writers };
    expect(await finalizeInterrupted(deps, record, logger)).toBe("completed");
    expect(await dead.runs.get("written-f")).toMatchObject({ status: "completed" });
    const sessionKey = directRequest("written-f", "written-f").ctx.sessionKey;
    const lines = await linesOf(dead.store, sessionKey, "written-f");
    expect(lines.map(([type]) => type)).toEqual(["writer", "user", "assistant", "outcome"]);
  });

  it("finalized (not resumed): it ends completed with its staged answer written", async () => {
    const { dead } = await stoppedAfterQueuing("finalized", "final-x", "The answer, finalized.");
    const record = (await dead.runs.get("final-x"))!;
    expect(record.status).toBe("running");
    const deps = { runs: dead.runs, sessions: dead.store, activity: dead.activity, writers: dead.writers };
    expect(await finalizeInterrupted(deps, record, logger)).toBe("completed");
    const ended = await dead.runs.get("final-x");
    expect(ended).toMatchObject({ status: "completed", stopReason: "natural_end" });
    // A Telegram run's record keeps no text (its transcript has it), as its settle would have left it.
    expect(ended?.text).toBeUndefined();
    expect(await dead.runs.stagedAnswer("final-x")).toBeUndefined();
    const sessionKey = directRequest("final-x", "finalized").ctx.sessionKey;
    expect(await redis.hgetall(`${prefix}:usage:${sessionKey}`)).toEqual({ input: "5", output: "3" });
    const session = (await dead.store.get(sessionKey))!;
    const tail = (await dead.store.read(session.sessionId)).slice(-2);
    expect(tail).toMatchObject([
      { type: "assistant", runId: "final-x", text: "The answer, finalized." },
      { type: "outcome", runId: "final-x", status: "completed" },
    ]);
    // The dead attempt, had it only been frozen, wakes and writes its answer late, under its own claim:
    // no reader sees it a second time.
    const lines = await dead.store.read(session.sessionId);
    const old = lines.find((e) => e.type === "writer" && e.runId === "final-x")!;
    const writer = old.type === "writer" ? old.writer : "";
    await dead.store.append(session.sessionId, [
      { type: "assistant", runId: "final-x", text: "The answer, finalized.", writer, at: Date.now() },
    ]);
    const answers = (await dead.store.read(session.sessionId)).filter((e) => e.type === "assistant");
    expect(answers.map((e) => e.type === "assistant" && e.text)).toEqual(["The answer, finalized."]);
    // The finalize's claim line names the claim it took again, above the dead attempt's: a claim line
    // the dead attempt writes late (its own again) is then no claim to any reader, and its lines stay unseen.
    const claims = lines.flatMap((e) => (e.type === "writer" && e.runId === "final-x" ? [e.writer] : []));
    const [attempt, finalize] = claims.map(writerGeneration);
    expect(claims).toHaveLength(2);
    expect(finalize).toBeGreaterThan(attempt!);
    await dead.store.append(session.sessionId, [
      { type: "writer", runId: "final-x", writer, at: Date.now() },
      { type: "assistant", runId: "final-x", text: "A late step.", writer, at: Date.now() },
    ]);
    const after = await dead.store.read(session.sessionId);
    expect(after.filter((e) => e.type === "assistant").map((e) => e.type === "assistant" && e.text)).toEqual([
      "The answer, finalized.",
    ]);
  });

  it("finalized on the web chat: its record keeps the answer, for a chat.send retried by its key", async () => {
    const direct = directRequest("final-w", "final-w", "a question");
    const request = { ...direct, ctx: { ...direct.ctx, channel: "webchat" } };
    const { dead } = await stoppedAfterQueuing(
      "final-w",
      "final-w",
      "Kept for the retry.",
      "before",
      request,
    );
    const record = (await dead.runs.get("final-w"))!;
    const deps = { runs: dead.runs, sessions: dead.store, activity: dead.activity, writers: dead.writers };
    expect(await finalizeInterrupted(deps, record, logger)).toBe("completed");
    expect(await dead.runs.get("final-w")).toMatchObject({
      status: "completed",
      text: "Kept for the retry.",
    });
  });
});
