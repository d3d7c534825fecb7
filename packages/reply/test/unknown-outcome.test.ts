import { createLogger, type ReplyTarget } from "@hub/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FakeChatAdapter,
  type FakeChatPlatform,
  startFakeChatPlatform,
} from "../../../test/fakes/src/index.js";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { ReplyDispatcher } from "../src/index.js";

const prefix = testPrefix("unknown-outcome");
let platform: FakeChatPlatform;
let replies: ReplyDispatcher;
let stopWorker: () => Promise<void>;

beforeAll(async () => {
  platform = await startFakeChatPlatform();
  replies = new ReplyDispatcher({
    redisUrl: REDIS_URL,
    prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => ({ textLimit: 200, markdown: "plain", threads: false, typing: false, edit: false }),
    sendTimeoutMs: 300,
    sweepIntervalMs: 100,
    graceMs: 500,
  });
  const adapter = new FakeChatAdapter("fakechat", platform.url);
  const worker = replies.startDelivery(() => adapter, { concurrency: 4 });
  stopWorker = () => worker.close();
});
afterAll(async () => {
  await stopWorker();
  await replies.close();
  await platform.close();
  await dropPrefix(prefix);
});

describe("a send slower than sendTimeoutMs", () => {
  it("has an unknown outcome: it is retried once, then given up and counted, and the reply still settles", async () => {
    // The platform takes longer than the timeout, and posts the message anyway (as a real one may).
    platform.setDelay(600);
    const target: ReplyTarget = { channel: "fakechat", accountId: "default", chatId: "slow-chat" };
    const reply = replies.open("slow-reply", target);
    await reply.push("maybe posted");
    await reply.end();
    expect(await reply.settled()).toEqual({ total: 1, delivered: 0, failed: 1 });
    await new Promise((r) => setTimeout(r, 700));
    // Tried twice, never a third time; both attempts counted as unknown outcomes.
    expect(platform.messages.filter((m) => m.replyId === "slow-reply")).toHaveLength(2);
    expect(await replies.unknownSendOutcomes()).toBe(2);
    platform.setDelay(0);
  }, 20_000);
});
