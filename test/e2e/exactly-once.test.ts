import type { AdapterFields } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeChatPlatform, FakeOpenAI } from "../fakes/src/index.js";
import { GatewayClient } from "../support/gateway-client.js";
import { type FakeWorld, startFakeWorld, type TestHub } from "../support/hub.js";
import { REDIS_URL, waitFor } from "../support/redis.js";

let world: FakeWorld;
let hub: TestHub;
let model: FakeOpenAI;
let platform: FakeChatPlatform;
beforeAll(async () => {
  world = await startFakeWorld("once", { telegram: { dmPolicy: "allowlist", allowFrom: ["42"] } });
  ({ hub, model, platform } = world);
});
afterAll(async () => world.dispose());

const userTexts = () => model.requests.map((r) => JSON.stringify(r.messages.at(-1)));

describe("exactly one run", () => {
  it("the same idempotencyKey sent 20 times at once gives one run and one answer", async () => {
    model.script({ text: "The one and only answer.", chunkSize: 4, delayMs: 20 });
    const clients = await Promise.all(
      Array.from({ length: 4 }, () => GatewayClient.open(hub.port, hub.token)),
    );
    const sends = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        clients[i % 4]!.request("chat.send", { text: "only once please", idempotencyKey: "idem-key-0020" }),
      ),
    );
    const statuses = sends.map((s) => (s.payload as { status: string }).status);
    expect(statuses.filter((s) => s === "accepted")).toHaveLength(1);
    expect(statuses.every((s) => s === "accepted" || s === "in_flight" || s === "completed")).toBe(true);
    const final = await clients[0]!.terminal("idem-key-0020");
    expect(final).toMatchObject({ state: "final", text: "The one and only answer." });
    // A repeat after the end answers the recorded result without a new run.
    const again = await clients[1]!.request("chat.send", {
      text: "only once please",
      idempotencyKey: "idem-key-0020",
    });
    expect(again.payload).toMatchObject({ status: "completed", text: "The one and only answer." });
    await new Promise((r) => setTimeout(r, 300));
    expect(userTexts().filter((t) => t.includes("only once please"))).toHaveLength(1);
    const history = await clients[0]!.request("chat.history", {});
    const messages = (history.payload as { messages: Array<{ role: string }> }).messages;
    expect(messages.filter((m) => m.role === "user")).toHaveLength(1);
    expect(messages.filter((m) => m.role === "assistant")).toHaveLength(1);
    for (const c of clients) c.close();
  });

  it("the same inbound message dispatched twice (also at once) gives one run", async () => {
    const fields: AdapterFields = {
      channel: "telegram",
      messageId: "777",
      chat: { type: "direct", id: "42" },
      sender: { id: "42", name: "Ann" },
      body: "redelivered hello",
      timestamp: Date.now(),
    };
    // At once: one is admitted; the other is a duplicate, or told to retry (the platform redelivers).
    const first = await Promise.allSettled([
      hub.dispatcher!.dispatchInboundMessage(fields),
      hub.dispatcher!.dispatchInboundMessage(fields),
    ]);
    const later = await hub.dispatcher!.dispatchInboundMessage(fields);
    const statuses = first.map((r) => (r.status === "fulfilled" ? r.value.status : "retry"));
    expect(statuses.filter((s) => s === "accepted")).toHaveLength(1);
    expect(statuses.filter((s) => s !== "accepted")[0]).toMatch(/^(duplicate|retry)$/);
    expect(later.status).toBe("duplicate");
    const accepted = first.flatMap((r) =>
      r.status === "fulfilled" && r.value.status === "accepted" ? [r.value] : [],
    )[0]!;
    await waitFor(async () => (await hub.replies.status(accepted.runId)).settled, "reply settled");
    expect(userTexts().filter((t) => t.includes("redelivered hello"))).toHaveLength(1);
    expect(platform.messages.filter((m) => m.replyId === accepted.runId).length).toBeGreaterThan(0);
  });

  it("a channel run's record keeps its outcome but not the answer's text (only chat.send can ask for it again)", async () => {
    const long = `A long answer. ${"Words that make it longer than a compact hash value. ".repeat(6)}`;
    model.script({ text: long });
    const result = await hub.dispatcher!.dispatchInboundMessage({
      channel: "telegram",
      messageId: "779",
      chat: { type: "direct", id: "42" },
      sender: { id: "42", name: "Ann" },
      body: "a question with a long answer",
      timestamp: Date.now(),
    });
    if (result.status !== "accepted") throw new Error(`not accepted: ${result.status}`);
    await waitFor(async () => (await hub.replies.status(result.runId)).settled, "reply settled");
    const redis = new Redis(REDIS_URL);
    try {
      const key = `${hub.prefix}:run:${result.runId}`;
      await waitFor(async () => (await redis.hget(key, "status")) === "completed", "the outcome");
      expect(await redis.hget(key, "text")).toBeNull();
      // Every value short: Redis keeps the record in its compact encoding for the record's 7 days.
      expect(await redis.object("ENCODING", key)).toBe("listpack");
    } finally {
      redis.disconnect();
    }
    expect(
      platform.messages
        .filter((m) => m.replyId === result.runId)
        .map((m) => m.text)
        .join(""),
    ).toContain("A long answer.");
  });

  it("a message from a sender not on the allowlist gets no run", async () => {
    const result = await hub.dispatcher!.dispatchInboundMessage({
      channel: "telegram",
      messageId: "778",
      chat: { type: "direct", id: "666" },
      sender: { id: "666" },
      body: "let me in",
      timestamp: Date.now(),
    });
    expect(result).toMatchObject({ status: "dropped" });
    expect(userTexts().filter((t) => t.includes("let me in"))).toHaveLength(0);
  });
});
