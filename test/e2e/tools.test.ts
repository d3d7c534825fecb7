import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeOpenAI } from "../fakes/src/index.js";
import type { GatewayClient } from "../support/gateway-client.js";
import { type FakeWorld, type ModelHub, startFakeWorld, startModelHub } from "../support/hub.js";
import { waitFor } from "../support/redis.js";

let setup: ModelHub;
let model: FakeOpenAI;
let client: GatewayClient;
beforeAll(async () => {
  setup = await startModelHub("tools", {
    tools: { approvals: { current_time: "ask" }, approvalTimeoutSeconds: 10 },
  });
  ({ model, client } = setup);
});
afterAll(() => setup.dispose());

const toolResult = (i: number) => {
  const messages = model.requests[i]!.messages as Array<{ role: string; content: string }>;
  return messages.filter((m) => m.role === "tool").at(-1)?.content ?? "";
};

async function approvalCode(runId: string): Promise<string> {
  let code = "";
  await waitFor(() => {
    const match = client
      .chatEvents(runId)
      .map((e) => /Reply \/approve ([A-Z0-9]{6})/.exec(e.text))
      .find(Boolean);
    code = match?.[1] ?? "";
    return code !== "";
  }, "the approval request");
  return code;
}

describe("tool approvals in chat", () => {
  it("asks with a short code; /approve runs the tool", async () => {
    const s = "agent:main:webchat:direct:approve";
    model.script(
      { text: "Let me check.", toolCalls: [{ name: "current_time", arguments: "{}" }] },
      { text: "Here is the time." },
    );
    await client.request("chat.send", {
      sessionKey: s,
      text: "what time is it",
      idempotencyKey: "approve-run-1",
    });
    const code = await approvalCode("approve-run-1");
    const texts = client.chatEvents("approve-run-1").map((e) => e.text);
    expect(texts[0]).toBe("Let me check.");
    await client.request("chat.send", {
      sessionKey: s,
      text: `/approve ${code}`,
      idempotencyKey: "approve-cmd-1",
    });
    expect(await client.terminal("approve-cmd-1")).toMatchObject({ text: "Approved." });
    expect(await client.terminal("approve-run-1")).toMatchObject({ state: "final" });
    expect(new Date(toolResult(model.requests.length - 1)).getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it("/deny refuses it, and the model is told so", async () => {
    const s = "agent:main:webchat:direct:deny";
    model.script({ toolCalls: [{ name: "current_time", arguments: "{}" }] }, { text: "Okay, I will not." });
    await client.request("chat.send", { sessionKey: s, text: "time?", idempotencyKey: "deny-run-1" });
    const code = await approvalCode("deny-run-1");
    await client.request("chat.send", { sessionKey: s, text: `/deny ${code}`, idempotencyKey: "deny-cmd-1" });
    expect(await client.terminal("deny-run-1")).toMatchObject({ text: "Okay, I will not." });
    expect(toolResult(model.requests.length - 1)).toBe(
      "Refused: the user did not approve running current_time.",
    );
  });

  it("a code from another chat does not approve", async () => {
    const res = await client.request("chat.send", {
      sessionKey: "agent:main:webchat:direct:other",
      text: "/approve ABCDEF",
      idempotencyKey: "approve-other-1",
    });
    expect(res.ok).toBe(true);
    expect((await client.terminal("approve-other-1")).text).toMatch(/No pending approval/);
  });
});

describe("tool policy per group", () => {
  let world: FakeWorld;
  beforeAll(async () => {
    world = await startFakeWorld("toolgroups", {
      telegram: {
        dmPolicy: "allowlist",
        allowFrom: ["7"],
        groups: { g1: { requireMention: false, tools: { deny: ["memory_read", "memory_write"] } } },
      },
    });
  });
  afterAll(async () => world.dispose());

  it("a group gets fewer tools than the owner's DMs", async () => {
    const base = { channel: "telegram", sender: { id: "7" }, timestamp: Date.now(), body: "hi" };
    await world.hub.dispatcher!.dispatchInboundMessage({
      ...base,
      messageId: "1",
      chat: { type: "direct", id: "7" },
    });
    await world.hub.dispatcher!.dispatchInboundMessage({
      ...base,
      messageId: "2",
      chat: { type: "group", id: "g1" },
    });
    await waitFor(() => world.model.requests.length === 2, "two model calls");
    const names = (i: number) =>
      ((world.model.requests[i]!.tools ?? []) as Array<{ function: { name: string } }>)
        .map((t) => t.function.name)
        .sort();
    const dm = world.model.requests.findIndex((r) =>
      JSON.stringify(r.messages).includes("direct (private) chat"),
    );
    expect(names(dm)).toEqual(["current_time", "memory_read", "memory_write", "send_file", "session_status"]);
    expect(names(1 - dm)).toEqual(["current_time", "send_file", "session_status"]);
  });
});
