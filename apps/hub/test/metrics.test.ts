import { createLogger } from "@hub/core";
import { ChatEventBus, WebChatAdapter } from "@hub/gateway";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { HubMetrics } from "../src/metrics.js";

const prefix = testPrefix("metrics");
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  redis.disconnect();
  await dropPrefix(prefix);
});

describe("HubMetrics.meterAdapter", () => {
  it("gives one metered view per adapter, its methods bound once to the adapter, its sends timed", async () => {
    const metrics = new HubMetrics(redis, prefix);
    const adapter = new WebChatAdapter(new ChatEventBus(redis, prefix, createLogger({ level: "silent" })));
    const metered = metrics.meterAdapter(adapter);
    // Delivery asks per segment: the same view every time, and the same bound method on every read.
    expect(metrics.meterAdapter(adapter)).toBe(metered);
    expect(metered?.status).toBe(metered?.status);
    // Bound to the adapter itself: its private fields are reachable through the view.
    await adapter.start(async () => ({ kind: "ignored", reason: "test" }));
    expect(metered?.status?.().state).toBe("connected");
    const target = { channel: "webchat", accountId: "default", chatId: "s1" };
    await metered?.send({ replyId: "r1", index: 0, text: "hi" }, target);
    await metered?.send({ replyId: "r1", index: 1, text: "there" }, target);
    expect(await metrics.render()).toMatch(/^hub_delivery_seconds_count\{channel="webchat"\} 2$/m);
  });
});
