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

describe("HubMetrics with agent threads", () => {
  // The value of one sample line (undefined when absent).
  const sample = (text: string, line: string) => {
    const found = text.split("\n").find((l) => l.startsWith(`${line} `));
    return found === undefined ? undefined : Number(found.split(" ").pop());
  };

  it("a thread's have its counts only; the main thread's scrape adds them and shows the process once", async () => {
    const main = new HubMetrics(redis, prefix);
    const thread = new HubMetrics(redis, prefix, { processWide: false });
    const threadText = await thread.registry.metrics();
    expect(threadText).not.toMatch(/^process_|^nodejs_|^hub_queue_depth|^hub_failed_deliveries/m);
    main.runFinished("run-a", "completed", Date.now() - 10);
    thread.runFinished("run-b", "completed", Date.now() - 10);
    thread.runFinished("run-c", "failed", Date.now() - 10);
    main.addThreads(async () => [await thread.registry.getMetricsAsJSON()]);
    const text = await main.render();
    expect(sample(text, 'hub_runs_total{outcome="completed"}')).toBe(2);
    expect(sample(text, 'hub_runs_total{outcome="failed"}')).toBe(1);
    expect(sample(text, "hub_run_duration_seconds_count")).toBe(3);
    // The process's figures and the installation's gauges, as without threads (a sum over threads would
    // drop the start time and double the rest).
    expect(sample(text, "process_start_time_seconds")).toBeGreaterThan(0);
    expect(sample(text, "hub_failed_deliveries")).toBe(0);
    expect(text.split("\n").filter((l) => l.startsWith("# TYPE process_cpu_seconds_total ")).length).toBe(1);
  });
});
