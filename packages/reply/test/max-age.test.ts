import type { ReplyTarget } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { FakeChatAdapter, startFakeChatPlatform } from "../../../test/fakes/src/index.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { FailedDeliveries } from "../src/index.js";
import { plainTextDispatcher } from "./dispatcher-kit.js";

const prefix = testPrefix("max-age");
const redis = new Redis(REDIS_URL);
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await dropPrefix(prefix);
  redis.disconnect();
});

describe("delivery.maxAge", () => {
  it("segments older than maxAge when delivery resumes are not sent: recorded as expired, the chat told once", async () => {
    const platform = await startFakeChatPlatform();
    cleanups.push(() => platform.close());
    const replies = plainTextDispatcher(prefix, { maxAgeMs: 300, sweepIntervalMs: 100, graceMs: 500 });
    cleanups.push(() => replies.close());
    const target: ReplyTarget = { channel: "fakechat", accountId: "default", chatId: "stale-chat" };
    // Two replies queued while no delivery process runs (the hub is down)...
    const first = replies.open("stale-1", target);
    await first.push("old answer one");
    await first.end();
    const second = replies.open("stale-2", target);
    await second.push("old answer two");
    await second.end();
    await new Promise((r) => setTimeout(r, 400));
    // ...and delivery starts after they are too old.
    const adapter = new FakeChatAdapter("fakechat", platform.url);
    const worker = replies.startDelivery(() => adapter, { concurrency: 4 });
    cleanups.push(() => worker.close());
    expect(await first.settled()).toEqual({ total: 1, delivered: 0, failed: 1 });
    expect(await second.settled()).toEqual({ total: 1, delivered: 0, failed: 1 });
    await waitFor(() => platform.messages.length === 1, "one notice");
    expect(platform.messages[0]?.text).toMatch(/could not be delivered in time/);
    expect(await replies.expiredSegments()).toBe(2);
    // Kept with the failed deliveries (listed and retryable), marked expired.
    const kept = await new FailedDeliveries(redis, prefix).list();
    expect(kept.map((f) => [f.replyId, f.kind, f.text])).toEqual([
      ["stale-2", "expired", "old answer two"],
      ["stale-1", "expired", "old answer one"],
    ]);
    // A fresh answer afterwards is delivered as usual.
    const fresh = replies.open("fresh", target);
    await fresh.push("new answer");
    await fresh.end();
    expect(await fresh.settled()).toEqual({ total: 1, delivered: 1, failed: 0 });
    expect(platform.messages.map((m) => m.text)).toHaveLength(2);
    expect(platform.messages[1]?.text).toBe("new answer");
    // Retrying an expired one sends it again, in order after everything before.
    const retried = await new FailedDeliveries(redis, prefix).retry(replies, [kept[1]?.id ?? ""]);
    expect(retried.map((f) => f.text)).toEqual(["old answer one"]);
    await waitFor(() => platform.messages.length === 3, "the retried answer");
    expect(platform.messages[2]?.text).toBe("old answer one");
    expect(await new FailedDeliveries(redis, prefix).count()).toBe(1);
  });
});
