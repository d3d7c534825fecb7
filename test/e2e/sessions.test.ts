import { createLogger } from "@hub/core";
import { FileSessionStore, RunRecords, SessionWriters } from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/src/index.js";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub, type TestHub } from "../support/hub.js";
import { REDIS_URL, waitFor } from "../support/redis.js";

let hub: TestHub;
let model: FakeOpenAI;
let redis: Redis;
beforeAll(async () => {
  model = await startFakeOpenAI();
  redis = new Redis(REDIS_URL);
  hub = await startTestHub(
    { agent: { model: "fake/m" }, models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } } },
    "sessions",
  );
});
afterAll(async () => {
  await hub.dispose();
  await model.close();
  redis.disconnect();
});

// A web chat client that sent `text` to the session (the run's id is its idempotency key).
async function sendFrom(port: number, token: string, sessionKey: string, text: string, runId: string) {
  const client = await GatewayClient.open(port, token);
  await client.request("chat.send", { sessionKey, text, idempotencyKey: runId });
  return client;
}

const toolStep = () => ({
  toolCalls: [{ name: "current_time", arguments: "{}" }],
  delayMs: 150,
  chunkSize: 2,
});

describe("session writer claims through the hub", () => {
  it("a run with 5 tool calls and slow model calls completes: its own writes never look like a takeover", async () => {
    model.script(toolStep(), toolStep(), toolStep(), toolStep(), toolStep(), {
      text: "Done after five tools.",
      delayMs: 150,
    });
    const sessionKey = "agent:main:webchat:direct:five";
    const client = await sendFrom(hub.port, hub.token, sessionKey, "use five tools", "five-tools-0001");
    expect(await client.terminal("five-tools-0001", 30_000)).toMatchObject({
      state: "final",
      text: "Done after five tools.",
    });
    const store = new FileSessionStore(hub.stateDir, createLogger({ level: "silent" }));
    const session = (await store.get(sessionKey))!;
    const entries = (await store.read(session.sessionId)).filter(
      (e) => "runId" in e && e.runId === "five-tools-0001",
    );
    const calls = entries.flatMap((e) => (e.type === "assistant" ? (e.toolCalls ?? []) : []));
    const results = entries.filter((e) => e.type === "tool_result");
    expect(calls).toHaveLength(5);
    expect(results.map((r) => (r.type === "tool_result" ? r.toolCallId : ""))).toEqual(
      calls.map((c) => c.id),
    );
    expect(entries.at(-1)).toMatchObject({ type: "outcome", status: "completed" });
    client.close();
  }, 40_000);

  it("a newer claim on the session ends the running run as superseded; it writes nothing after", async () => {
    model.script(toolStep(), { ...toolStep(), delayMs: 400 }, toolStep(), { text: "never" });
    const sessionKey = "agent:main:webchat:direct:takeover";
    const client = await sendFrom(hub.port, hub.token, sessionKey, "slow work", "takeover-a-0001");
    const store = new FileSessionStore(hub.stateDir, createLogger({ level: "silent" }));
    // Wait until the run committed its first step, then claim the session for another run.
    let sessionId = "";
    await waitFor(async () => {
      const s = await store.get(sessionKey);
      if (!s) return false;
      sessionId = s.sessionId;
      return (await store.read(s.sessionId)).some((e) => e.type === "tool_result");
    }, "first committed step");
    const claimedAt = Date.now();
    const { superseded } = await new SessionWriters(redis, hub.prefix).claim(
      sessionKey,
      sessionId,
      "takeover-b-0001",
    );
    expect(superseded).toBe("takeover-a-0001");
    expect((await client.terminal("takeover-a-0001")).state).toBe("aborted");
    expect(await new RunRecords(redis, hub.prefix).get("takeover-a-0001")).toMatchObject({
      status: "superseded",
    });
    await new Promise((r) => setTimeout(r, 500));
    const late = (await store.read(sessionId)).filter(
      (e) => "runId" in e && e.runId === "takeover-a-0001" && e.at > claimedAt,
    );
    expect(late).toEqual([]);
    client.close();
  }, 30_000);

  // The answer's own step (no tool calls) is written by the settle, after its blocks' pushes: each push is
  // fenced by the claim in Redis, which keeps a superseded run out (with every reader dropping a superseded
  // writer's lines). Here an early block's push is refused; answer-write.test.ts refuses the last one.
  it("a newer claim while the model writes the answer: nothing of it is delivered or read back", async () => {
    model.script({ text: "This answer must never reach anyone.", chunkSize: 4, delayMs: 60 });
    const sessionKey = "agent:main:webchat:direct:takeover-answer";
    const client = await sendFrom(hub.port, hub.token, sessionKey, "answer slowly", "takeover-c-0001");
    await waitFor(
      () => model.requests.some((r) => JSON.stringify(r.messages).includes("answer slowly")),
      "the model call",
    );
    const store = new FileSessionStore(hub.stateDir, createLogger({ level: "silent" }));
    const session = (await store.get(sessionKey))!;
    const claimedAt = Date.now();
    await new SessionWriters(redis, hub.prefix).claim(sessionKey, session.sessionId, "takeover-d-0001");
    expect((await client.terminal("takeover-c-0001")).state).toBe("aborted");
    expect(await new RunRecords(redis, hub.prefix).get("takeover-c-0001")).toMatchObject({
      status: "superseded",
    });
    const late = (await store.read(session.sessionId)).filter(
      (e) => "runId" in e && e.runId === "takeover-c-0001" && e.at > claimedAt,
    );
    expect(late).toEqual([]);
    const shown = client.chatEvents("takeover-c-0001").map((e) => e.text ?? "");
    expect(shown.join("")).not.toContain("never reach");
    client.close();
  }, 30_000);
});

describe("a runner that loses its session lane", () => {
  // Its own hub and model, so no other test's leftover scripts can answer for it.
  let hub: TestHub;
  let model: FakeOpenAI;
  beforeAll(async () => {
    model = await startFakeOpenAI();
    hub = await startTestHub(
      { agent: { model: "fake/m" }, models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } } },
      "lease",
    );
  });
  afterAll(async () => {
    await hub.dispose();
    await model.close();
  });

  it("abandons the run without deciding it; the process that takes over resumes and finishes it", async () => {
    const sessionKey = "agent:main:webchat:direct:leaselost";
    model.script(
      { text: "interrupted answer ".repeat(30), chunkSize: 6, delayMs: 60 },
      { text: "Finished by the new owner." },
    );
    const client = await sendFrom(hub.port, hub.token, sessionKey, "long one", "lease-lost-0001");
    await waitFor(
      () => model.requests.some((r) => JSON.stringify(r.messages).includes("long one")),
      "the model call",
    );
    // Another process "took" the session: this runner's lease is gone.
    await redis.del(`${hub.prefix}:mb:runs:own:${sessionKey}`);
    expect(await client.terminal("lease-lost-0001", 20_000)).toMatchObject({
      state: "final",
      text: "Finished by the new owner.",
    });
    expect(await new RunRecords(redis, hub.prefix).get("lease-lost-0001")).toMatchObject({
      status: "completed",
      attempt: 2,
    });
    client.close();
  }, 30_000);
});
