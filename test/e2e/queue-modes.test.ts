import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeOpenAI } from "../fakes/src/index.js";
import type { GatewayClient } from "../support/gateway-client.js";
import { type ModelHub, startModelHub } from "../support/hub.js";
import { waitFor } from "../support/redis.js";

let setup: ModelHub;
let model: FakeOpenAI;
let client: GatewayClient;
beforeAll(async () => {
  setup = await startModelHub("modes");
  ({ model, client } = setup);
});
afterAll(() => setup.dispose());

let n = 0;
const key = () => `mode-${Date.now()}-${n++}`;
const send = async (sessionKey: string, text: string) => {
  const runId = key();
  const res = await client.request("chat.send", { sessionKey, text, idempotencyKey: runId });
  expect(res.ok).toBe(true);
  return runId;
};
const lastUser = (i: number) => {
  const messages = model.requests[i]!.messages as Array<{ role: string; content: string }>;
  return messages.filter((m) => m.role === "user").at(-1)?.content ?? "";
};
const requestsFor = (text: string) =>
  model.requests.filter((r) => JSON.stringify(r.messages).includes(text)).length;
const modelStarted = (text: string) => waitFor(() => requestsFor(text) > 0, `model call for "${text}"`);

describe("queue modes and session commands", () => {
  it("steer (default): a message sent mid-run joins the run at the next tool-batch boundary", async () => {
    const s = "agent:main:webchat:direct:steer";
    model.script(
      { toolCalls: [{ name: "current_time", arguments: "{}" }], delayMs: 400, chunkSize: 2 },
      { text: "Answer with both." },
    );
    const a = await send(s, "first question");
    await modelStarted("first question");
    const b = await send(s, "also this");
    expect(await client.terminal(a)).toMatchObject({ state: "final", text: "Answer with both." });
    expect((await client.terminal(b)).state).toBe("final");
    const second = model.requests.at(-1)!.messages as Array<{ role: string; content: string }>;
    // The steered message follows the tool result, and no separate run answered it.
    expect(second.at(-2)?.role).toBe("tool");
    expect(second.at(-1)).toMatchObject({ role: "user", content: "also this" });
    expect(requestsFor("also this")).toBe(1);
  });

  it("steer: a message the run never reaches a boundary for runs as a follow-up, not lost", async () => {
    const s = "agent:main:webchat:direct:steer-late";
    model.script({ text: "slow plain answer", chunkSize: 2, delayMs: 80 }, { text: "Follow-up answer." });
    const a = await send(s, "no tools here");
    await modelStarted("no tools here");
    const b = await send(s, "late message");
    expect((await client.terminal(a)).state).toBe("final");
    expect(await client.terminal(b)).toMatchObject({ state: "final", text: "Follow-up answer." });
    expect(lastUser(model.requests.length - 1)).toBe("late message");
  });

  it("followup: the message runs as its own turn after the running one", async () => {
    const s = "agent:main:webchat:direct:followup";
    await client.terminal(await send(s, "/queue followup"));
    model.script({ text: "first answer", chunkSize: 2, delayMs: 50 }, { text: "second answer" });
    const a = await send(s, "question one");
    await modelStarted("question one");
    const b = await send(s, "question two");
    expect(await client.terminal(a)).toMatchObject({ text: "first answer" });
    expect(await client.terminal(b)).toMatchObject({ text: "second answer" });
    const last = model.requests.at(-1)!.messages as Array<{ role: string; content: string }>;
    expect(last.map((m) => m.content)).toEqual(
      expect.arrayContaining(["question one", "first answer", "question two"]),
    );
  });

  it("collect: messages sent during a run are answered together in one follow-up turn", async () => {
    const s = "agent:main:webchat:direct:collect";
    await client.terminal(await send(s, "/queue collect"));
    model.script({ text: "busy answer", chunkSize: 2, delayMs: 60 }, { text: "both at once" });
    const a = await send(s, "keep me busy");
    await modelStarted("keep me busy");
    const b = await send(s, "collected one");
    const c = await send(s, "collected two");
    await client.terminal(a);
    expect(await client.terminal(b)).toMatchObject({ text: "both at once" });
    await new Promise((r) => setTimeout(r, 300));
    expect(requestsFor("collected one")).toBe(1);
    expect(lastUser(model.requests.length - 1)).toBe("collected one\n\ncollected two");
    // Every collected message's own run is settled too (answered by the batch).
    expect((await client.terminal(c)).state).toBe("final");
  });

  it("interrupt: the running run is aborted and the new message runs", async () => {
    const s = "agent:main:webchat:direct:interrupt";
    await client.terminal(await send(s, "/queue interrupt"));
    model.script({ text: "x ".repeat(300), chunkSize: 2, delayMs: 40 }, { text: "new answer" });
    const a = await send(s, "long task");
    await modelStarted("long task");
    const b = await send(s, "never mind, do this");
    expect((await client.terminal(a)).state).toBe("aborted");
    expect(await client.terminal(b)).toMatchObject({ text: "new answer" });
  });

  it("/queue with an unknown mode says it is not a queue mode and lists the modes; the mode is kept", async () => {
    const s = "agent:main:webchat:direct:queue-bogus";
    const bogus = await client.terminal(await send(s, "/queue bogus"));
    expect(bogus.text).toBe(
      '"bogus" is not a queue mode. Queue mode is steer. Use /queue steer, /queue followup, /queue collect or /queue interrupt.',
    );
    const shown = await client.terminal(await send(s, "/queue"));
    expect(shown.text).toBe(
      "Queue mode is steer. Use /queue steer, /queue followup, /queue collect or /queue interrupt.",
    );
    expect(model.requests.filter((r) => JSON.stringify(r.messages).includes("/queue"))).toEqual([]);
  });

  it("/stop is never stuck behind the running turn", async () => {
    const s = "agent:main:webchat:direct:stop";
    model.script({ text: "y ".repeat(300), chunkSize: 2, delayMs: 40 });
    const a = await send(s, "endless");
    await modelStarted("endless");
    const started = Date.now();
    const stop = await send(s, "/stop");
    expect(await client.terminal(stop)).toMatchObject({ state: "final", text: "Stopped." });
    expect((await client.terminal(a)).state).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("/new starts a new session id; /status reports model, session, queue mode and tokens", async () => {
    const s = "agent:main:webchat:direct:new";
    model.script({ text: "remember me" });
    await client.terminal(await send(s, "hello"));
    const before = await client.request("chat.history", { sessionKey: s });
    const oldId = (before.payload as { sessionId: string }).sessionId;
    expect(await client.terminal(await send(s, "/new"))).toMatchObject({ state: "final" });
    const after = await client.request("chat.history", { sessionKey: s });
    expect((after.payload as { sessionId: string }).sessionId).not.toBe(oldId);
    const status = await client.terminal(await send(s, "/status"));
    expect(status.text).toContain("Model: fake/m");
    expect(status.text).toContain(`Session: ${s}`);
    expect(status.text).toMatch(/Queue mode: steer/);
    expect(status.text).toMatch(/Tokens used: \d+ in, \d+ out/);
  });
});
