import type { OutboundSegment, ReplyTarget, SendResult } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { FakeChatAdapter } from "../../../test/fakes/src/index.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { plainTextDispatcher } from "./dispatcher-kit.js";

const prefix = testPrefix("lease-lost");
const redis = new Redis(REDIS_URL);

// A platform that never answers: a send ends only when its signal aborts it.
class HangingAdapter extends FakeChatAdapter {
  readonly aborted: unknown[] = [];
  sending = false;
  override async send(
    _segment: OutboundSegment,
    _target: ReplyTarget,
    options: { signal?: AbortSignal } = {},
  ): Promise<SendResult> {
    this.sending = true;
    const { signal } = options;
    return new Promise((_resolve, reject) => {
      signal?.addEventListener("abort", () => {
        this.aborted.push(signal.reason);
        reject(signal.reason);
      });
    });
  }
}

afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

describe("a send in flight when the delivery lease is lost", () => {
  it("is aborted, so it cannot land after the key's new drainer sends", async () => {
    const replies = plainTextDispatcher(prefix, { sendTimeoutMs: 30_000, leaseMs: 600 });
    const adapter = new HangingAdapter("fakechat", "http://127.0.0.1:9");
    const worker = replies.startDelivery(() => adapter, { concurrency: 2 });
    try {
      const reply = replies.open("hanging-reply", {
        channel: "fakechat",
        accountId: "default",
        chatId: "c1",
      });
      await reply.push("never answered");
      await waitFor(() => adapter.sending, "the send to start", 5_000);
      // Another drainer takes the key: this one's next renewal is refused.
      const owners = await redis.keys(`${prefix}*:own:*`);
      expect(owners).toHaveLength(1);
      await redis.set(owners[0]!, "another-drainer", "PX", 60_000);
      await waitFor(() => adapter.aborted.length > 0, "the send to be aborted", 3_000);
      expect(String(adapter.aborted[0])).toContain("delivery lease lost");
    } finally {
      await worker.close();
      await replies.close();
    }
  }, 20_000);
});
