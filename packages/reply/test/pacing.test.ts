import {
  type ChannelCapabilities,
  createLogger,
  type OutboundSegment,
  type ReplyTarget,
  type SendResult,
} from "@hub/core";
import { afterAll, describe, expect, it } from "vitest";
import { FakeChatAdapter, startFakeChatPlatform } from "../../../test/fakes/src/index.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { ReplyDispatcher } from "../src/index.js";

const cleanups: Array<() => Promise<void>> = [];
const prefixes: string[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  for (const p of prefixes) await dropPrefix(p);
});

/** The fake platform's adapter with pacing limits, noting when each send to a chat left. */
class PacedAdapter extends FakeChatAdapter {
  override readonly capabilities: ChannelCapabilities;
  readonly sentAt: Array<{ chatId: string; at: number }> = [];
  constructor(url: string, limits: { minSendIntervalMs: number; maxSendsPerSecond: number }) {
    super("fakechat", url);
    this.capabilities = { ...new FakeChatAdapter("fakechat", url).capabilities, ...limits };
  }
  override async send(segment: OutboundSegment, target: ReplyTarget, options?: { signal?: AbortSignal }) {
    this.sentAt.push({ chatId: target.chatId, at: Date.now() });
    return super.send(segment, target, options) as Promise<SendResult>;
  }
}

async function deliveryWith(limits: { minSendIntervalMs: number; maxSendsPerSecond: number }) {
  const platform = await startFakeChatPlatform();
  const prefix = testPrefix("pacing");
  prefixes.push(prefix);
  const adapter = new PacedAdapter(platform.url, limits);
  const replies = new ReplyDispatcher({
    redisUrl: REDIS_URL,
    prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => adapter.capabilities,
  });
  const worker = replies.startDelivery(() => adapter, { concurrency: 20 });
  cleanups.push(
    () => platform.close(),
    () => replies.close(),
    () => worker.close(),
  );
  const target = (chatId: string): ReplyTarget => ({ channel: "fakechat", accountId: "default", chatId });
  return { adapter, replies, target };
}

describe("pacing of sends (one step in Redis per send)", () => {
  it("a chat's sends keep its interval from the previous send's end; another chat is not held up", async () => {
    const { adapter, replies, target } = await deliveryWith({ minSendIntervalMs: 250, maxSendsPerSecond: 0 });
    const slow = replies.open("slow", target("paced"));
    for (const [i, text] of ["one", "two", "three"].entries())
      await slow.push(text, undefined, { last: i === 2 });
    await waitFor(() => adapter.sentAt.length === 1, "the first send");
    const other = replies.open("other", target("other"));
    await other.push("at once", undefined, { last: true });
    expect(await slow.settled()).toEqual({ total: 3, delivered: 3, failed: 0 });
    const paced = adapter.sentAt.filter((s) => s.chatId === "paced").map((s) => s.at);
    expect(paced[1]! - paced[0]!).toBeGreaterThanOrEqual(250);
    expect(paced[2]! - paced[1]!).toBeGreaterThanOrEqual(250);
    // The other chat's message went out between the paced chat's first and second sends.
    const otherAt = adapter.sentAt.find((s) => s.chatId === "other")!.at;
    expect(otherAt).toBeLessThan(paced[1]!);
  });

  it("the account's cap holds across chats: at most that many sends start in one second", async () => {
    const { adapter, replies, target } = await deliveryWith({ minSendIntervalMs: 0, maxSendsPerSecond: 4 });
    const streams = Array.from({ length: 9 }, (_, i) => replies.open(`r${i}`, target(`chat-${i}`)));
    await Promise.all(streams.map((s, i) => s.push(`message ${i}`, undefined, { last: true })));
    await Promise.all(streams.map((s) => s.settled()));
    const at = adapter.sentAt.map((s) => s.at).sort((a, b) => a - b);
    expect(at).toHaveLength(9);
    // Nine sends at four a second span three seconds of the clock: more than a second from first to last.
    expect(at[8]! - at[0]!).toBeGreaterThan(1000);
    const perSecond = new Map<number, number>();
    for (const t of at) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
    // The gate counts a second by the clock just before the send: at most one send can slip across.
    expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(5);
  });
});
