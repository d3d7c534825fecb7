import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeChatPlatform, FakeOpenAI } from "../fakes/src/index.js";
import { GatewayClient } from "../support/gateway-client.js";
import { type FakeWorld, startFakeWorld, type TestHub } from "../support/hub.js";
import { waitFor } from "../support/redis.js";

let world: FakeWorld;
let hub: TestHub;
let model: FakeOpenAI;
let platform: FakeChatPlatform;
beforeAll(async () => {
  world = await startFakeWorld("agent", { telegram: { groups: { g1: {} } } }, { textLimit: 100 });
  ({ hub, model, platform } = world);
});
afterAll(async () => world.dispose());

describe("agent runs through the hub", () => {
  it("runs a tool call and answers; the transcript pairs the call with its result", async () => {
    model.script(
      { toolCalls: [{ name: "current_time", arguments: "{}" }] },
      { text: "It is now.", chunkSize: 3 },
    );
    const client = await GatewayClient.open(hub.port, hub.token);
    await client.request("chat.send", { text: "what time is it?", idempotencyKey: "tool-run-0001" });
    expect(await client.terminal("tool-run-0001")).toMatchObject({ state: "final", text: "It is now." });
    const second = model.requests[1]!;
    const toolMessage = second.messages.at(-1) as { role: string; tool_call_id: string; content: string };
    expect(toolMessage.role).toBe("tool");
    expect(new Date(toolMessage.content).getTime()).toBeGreaterThan(Date.now() - 60_000);
    const history = await client.request("chat.history", {});
    expect(
      (history.payload as { messages: Array<{ role: string; text: string }> }).messages.map((m) => m.text),
    ).toEqual(["what time is it?", "It is now."]);
    client.close();
  });

  it("a failing model records `failed`, tells the user plainly, and leaves no half answer in the transcript", async () => {
    model.script({ fail: { status: 401 } });
    const client = await GatewayClient.open(hub.port, hub.token);
    await client.request("chat.send", { text: "will fail", idempotencyKey: "fail-run-0001" });
    const end = await client.terminal("fail-run-0001");
    expect(end.state).toBe("error");
    const deltas = client.chatEvents("fail-run-0001").filter((e) => e.state === "delta");
    expect(deltas.map((d) => d.text).join(" ")).toMatch(/refused our credentials/);
    const again = await client.request("chat.send", { text: "will fail", idempotencyKey: "fail-run-0001" });
    expect(again.payload).toMatchObject({ status: "failed" });
    const history = await client.request("chat.history", {});
    const messages = (
      history.payload as { messages: Array<{ role: string; runId: string }> }
    ).messages.filter((m) => m.runId === "fail-run-0001");
    expect(messages.map((m) => m.role)).toEqual(["user", "status"]);
    client.close();
  });

  it("chat.history shows a message waiting behind a running run, once, before and after its run writes it", async () => {
    model.script(
      { text: "first answer ".repeat(60).trim(), chunkSize: 13, delayMs: 40 },
      { text: "Second answer." },
    );
    const client = await GatewayClient.open(hub.port, hub.token);
    await client.request("chat.send", { text: "a long one first", idempotencyKey: "wait-run-0001" });
    await waitFor(
      () => model.requests.some((r) => JSON.stringify(r.messages).includes("a long one first")),
      "the first run's model call",
    );
    await client.request("chat.send", { text: "and then this", idempotencyKey: "wait-run-0002" });
    type Lines = { messages: Array<{ role: string; text: string; runId: string }> };
    const ours = async () =>
      ((await client.request("chat.history", {})).payload as Lines).messages
        .filter((m) => m.runId?.startsWith("wait-run-"))
        .map((m) => `${m.role}: ${m.text.slice(0, 16)}`);
    // A reloaded page (or a second tab) sees the waiting message, though no run has written it yet.
    expect(await ours()).toEqual(["user: a long one first", "user: and then this"]);
    await client.terminal("wait-run-0002", 30_000);
    expect(await ours()).toEqual([
      "user: a long one first",
      "assistant: first answer fir",
      "user: and then this",
      "assistant: Second answer.",
    ]);
    client.close();
  }, 40_000);

  it("chat.abort stops a running run as aborted", async () => {
    model.script({ text: "slow ".repeat(200), chunkSize: 5, delayMs: 30 });
    const client = await GatewayClient.open(hub.port, hub.token);
    await client.request("chat.send", { text: "take your time", idempotencyKey: "abort-run-0001" });
    await waitFor(
      () => model.requests.some((r) => JSON.stringify(r.messages).includes("take your time")),
      "model call started",
    );
    const res = await client.request("chat.abort", { runId: "abort-run-0001" });
    expect(res.ok).toBe(true);
    expect((await client.terminal("abort-run-0001")).state).toBe("aborted");
    // A run that does not exist is said to be unknown, not "abort requested".
    const none = await client.request("chat.abort", { runId: "no-such-run-0001" });
    expect(none.error?.code).toBe("not_found");
    client.close();
  });

  it("keeps an unmentioned group message as context and shows it to the model when mentioned", async () => {
    const base = {
      channel: "telegram",
      chat: { type: "group" as const, id: "g1", title: "Team" },
      timestamp: Date.now(),
    };
    const before = model.requests.length;
    const ctxResult = await hub.dispatcher!.dispatchInboundMessage({
      ...base,
      messageId: "101",
      sender: { id: "7", name: "Bob" },
      body: "the deploy is on friday",
    });
    expect(ctxResult.status).toBe("context");
    const run = await hub.dispatcher!.dispatchInboundMessage({
      ...base,
      messageId: "102",
      sender: { id: "8", name: "Eve" },
      body: "@bot when is the deploy?",
      wasMentioned: true,
      replyToMessageId: "102",
    });
    expect(run.status).toBe("accepted");
    await waitFor(
      async () => (await hub.replies.status((run as { runId: string }).runId)).settled,
      "group reply settled",
    );
    expect(model.requests.length).toBe(before + 1);
    const sent = JSON.stringify(model.requests.at(-1)!.messages);
    expect(sent).toContain("the deploy is on friday");
    expect(sent).toContain("not addressed to you");
    expect(platform.messages.filter((m) => m.chatId === "g1").length).toBeGreaterThan(0);
  });
});
