import { createLogger, LightAbort, type ReplyTarget, replyTargetKey } from "@hub/core";
import { mailboxBase, mailboxKeyName } from "@hub/queue";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FakeChatAdapter,
  type FakeChatPlatform,
  startFakeChatPlatform,
} from "../../../test/fakes/src/index.js";
import { monitorRedis } from "../../../test/support/monitor.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { ReplyDispatcher } from "../src/index.js";

// A reply settles when the ack of its last item settles its group: the last block's push names the reply's
// total (no end step of its own), and an end with nothing left to carry it queues a marker that is not sent.
const prefix = testPrefix("settlement");
const redis = new Redis(REDIS_URL);
const capabilitiesOf = () =>
  ({ textLimit: 200, markdown: "plain", threads: false, typing: false, edit: false }) as const;
const cleanups: Array<() => Promise<void>> = [];
let platform: FakeChatPlatform;
let replies: ReplyDispatcher;
beforeAll(async () => {
  platform = await startFakeChatPlatform();
  replies = new ReplyDispatcher({
    redisUrl: REDIS_URL,
    prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf,
    sweepIntervalMs: 100,
    graceMs: 500,
  });
  cleanups.push(
    () => platform.close(),
    () => replies.close(),
  );
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await dropPrefix(prefix);
  redis.disconnect();
});

const targetOf = (chatId: string): ReplyTarget => ({ channel: "fakechat", accountId: "default", chatId });
const queued = async (target: ReplyTarget) =>
  (await redis.lrange(mailboxKeyName(mailboxBase(prefix, "reply"), "q", replyTargetKey(target)), 0, -1)).map(
    (item) => item.slice(0, item.indexOf("|")),
  );
const textsTo = (chatId: string) => platform.messages.filter((m) => m.chatId === chatId).map((m) => m.text);

function deliver(): void {
  const adapter = new FakeChatAdapter("fakechat", platform.url);
  const worker = replies.startDelivery((channel) => (channel === "fakechat" ? adapter : undefined), {
    concurrency: 4,
  });
  cleanups.push(() => worker.close());
}

describe("reply settlement", () => {
  it("the last block's push ends the reply: no end step or marker, and end only returns the count", async () => {
    const target = targetOf("last-push");
    const reply = replies.open("r-last", target);
    await reply.push("one");
    await reply.push("two", undefined, { last: true });
    await expect(reply.push("three")).rejects.toThrow(/already ended/);
    expect(await reply.end()).toBe(2);
    expect(await queued(target)).toEqual(["r-last#0", "r-last#1$2"]);
    expect((await replies.status("r-last")).settled).toBe(false);
    deliver();
    expect(await reply.settled()).toEqual({ total: 2, delivered: 2, failed: 0 });
    expect(textsTo("last-push")).toEqual(["one", "two"]);
    // Kept for anyone who asks later, from any process.
    expect(await replies.status("r-last")).toEqual({ total: 2, delivered: 2, failed: 0, settled: true });
    expect(await replies.settled("r-last")).toEqual({ total: 2, delivered: 2, failed: 0 });
  });

  it("a reply ended without a last block settles through an end marker that is not sent", async () => {
    const target = targetOf("marker");
    const reply = replies.open("r-marker", target);
    await reply.push("only");
    expect(await reply.end()).toBe(1);
    const empty = replies.open("r-empty", target);
    expect(await empty.end()).toBe(0);
    expect(await reply.settled()).toEqual({ total: 1, delivered: 1, failed: 0 });
    expect(await empty.settled()).toEqual({ total: 0, delivered: 0, failed: 0 });
    expect(textsTo("marker")).toEqual(["only"]);
    // A marker needs no platform: an empty reply to a channel this process does not deliver still settles.
    const elsewhere = replies.open("r-elsewhere", { channel: "other", accountId: "default", chatId: "x" });
    await elsewhere.end();
    expect(await elsewhere.settled()).toEqual({ total: 0, delivered: 0, failed: 0 });
  });

  it("a segment the platform refuses is replaced by a note in its place: no silent gap in the answer", async () => {
    const target = targetOf("noted");
    platform.fail({ status: 400 });
    const reply = replies.open("r-noted", target);
    await reply.push("first part");
    await reply.push("second part", undefined, { last: true });
    expect(await reply.settled()).toEqual({ total: 2, delivered: 2, failed: 0 });
    const texts = platform.messages.filter((m) => m.replyId === "r-noted").map((m) => m.text);
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/^\[a part of this answer could not be sent: refused by the platform \(.+\)\]$/);
    expect(texts[1]).toBe("second part");
  });

  it("a refused last segment is counted as failed and still settles the reply", async () => {
    const target = targetOf("refused");
    // The chat refuses every message (the bot blocked): no note is tried.
    platform.fail({ status: 403 });
    const reply = replies.open("r-refused", target);
    await reply.push("refused", undefined, { last: true });
    expect(await reply.settled()).toEqual({ total: 1, delivered: 0, failed: 1 });
  });

  it("a reply waited for in the process that delivers it is settled to that waiter, unpublished; another process's waiter hears it", async () => {
    deliver();
    // Every PUBLISH Redis runs, seen by Redis itself.
    const monitor = await monitorRedis();
    const published: string[] = [];
    monitor.on("monitor", (_time: string, args: string[]) => {
      if (String(args[0]).toLowerCase() === "publish" && String(args[1]).startsWith(prefix))
        published.push(String(args[2]));
    });
    const elsewhere = new ReplyDispatcher({
      redisUrl: REDIS_URL,
      prefix,
      logger: createLogger({ level: "silent" }),
      capabilitiesOf,
    });
    try {
      const here = replies.open("r-here", targetOf("here"));
      await here.push("mine", undefined, { last: true });
      expect(await here.settled()).toEqual({ total: 1, delivered: 1, failed: 0 });
      // Pushed and waited for in another process (as `hub send` does), delivered here: published for it.
      const there = elsewhere.open("r-there", targetOf("there"));
      await there.push("theirs", undefined, { last: true });
      expect(await there.settled()).toEqual({ total: 1, delivered: 1, failed: 0 });
      await new Promise((r) => setTimeout(r, 100));
      expect(published.filter((m) => m.startsWith("r-here|"))).toEqual([]);
      expect(published.filter((m) => m.startsWith("r-there|"))).toEqual(["r-there|1|1|0"]);
      // The counts are kept for anyone who asks later either way.
      expect(await replies.status("r-here")).toEqual({ total: 1, delivered: 1, failed: 0, settled: true });
    } finally {
      monitor.disconnect();
      await elsewhere.close();
    }
  });
});

describe("a settlement wait given up", () => {
  it("rejects with the signal's reason and reads the reply's status no more", {
    timeout: 20_000,
  }, async () => {
    // Nothing delivers to this target: the reply never settles.
    const reply = replies.open("r-given-up", { ...targetOf("nobody"), channel: "nochannel" });
    await reply.push("never sent", undefined, { last: true });
    const giveUp = new AbortController();
    const waiting = reply.settled(giveUp.signal);
    const reads: string[] = [];
    const monitor = await monitorRedis();
    monitor.on("monitor", (_time: string, args: string[]) => {
      // The wait's status read (a GET of the reply's group record), not a delivery worker's look at its item.
      if (String(args[0]).toLowerCase() === "get" && String(args[1]).endsWith(":g:r-given-up"))
        reads.push(args.join(" "));
    });
    try {
      // One fallback read (after 2 s) proves the wait polls; then it is given up.
      await waitFor(() => reads.length > 0, "the wait's fallback status read", 5_000);
      giveUp.abort(new Error("run timed out"));
      await expect(waiting).rejects.toThrow("run timed out");
      const after = reads.length;
      await new Promise((r) => setTimeout(r, 4_500)); // past the next fallback (4 s)
      expect(reads.slice(after)).toEqual([]);
    } finally {
      monitor.disconnect();
    }
  });

  it("a wait given up before it began rejects at once, with a LightAbort as with an AbortSignal", async () => {
    const reply = replies.open("r-given-up-first", { ...targetOf("nobody"), channel: "nochannel" });
    await reply.push("never sent", undefined, { last: true });
    const light = new LightAbort();
    light.abort(new Error("the hub stops"));
    const controller = new AbortController();
    controller.abort(new Error("the run timed out"));
    const started = Date.now();
    await expect(reply.settled(light)).rejects.toThrow("the hub stops");
    await expect(reply.settled(controller.signal)).rejects.toThrow("the run timed out");
    // Not after the first fallback read (2 s): at once.
    expect(Date.now() - started).toBeLessThan(1_500);
  });
});
