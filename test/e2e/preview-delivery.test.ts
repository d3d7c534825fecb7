import { createLogger, type ReplyTarget } from "@hub/core";
import { ReplyDispatcher } from "@hub/reply";
import { TelegramAdapter } from "@hub/telegram";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeTelegram, startFakeTelegram } from "../fakes/src/index.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../support/redis.js";

// The reply dispatcher's live previews against Telegram's Bot API (fake): stale updates are skipped,
// a preview no segment took over is deleted, and a preview that was deleted on the platform is replaced
// by a new message rather than failing the answer.

const prefix = testPrefix("preview-delivery");
const logger = createLogger({ level: "silent" });
let telegram: FakeTelegram;
let replies: ReplyDispatcher;
let adapter: TelegramAdapter;
let closeWorker: () => Promise<void>;
let chat = 9100;

const nextTarget = (): ReplyTarget => ({
  channel: "telegram",
  accountId: "default",
  chatId: String(chat++),
});

beforeAll(async () => {
  telegram = await startFakeTelegram();
  adapter = new TelegramAdapter({
    botToken: telegram.token,
    apiRoot: telegram.apiRoot,
    state: { get: async () => undefined, set: async () => {} },
    logger,
    // One platform write per 300 ms per chat: previews queue up behind each other.
    pacing: { chatIntervalMs: 300, groupIntervalMs: 300, maxSendsPerSecond: 0 },
  });
  replies = new ReplyDispatcher({
    redisUrl: REDIS_URL,
    prefix,
    logger,
    capabilitiesOf: () => adapter.capabilities,
    sweepIntervalMs: 100,
    graceMs: 500,
  });
  const worker = replies.startDelivery(() => adapter, { concurrency: 4 });
  closeWorker = () => worker.close();
});
afterAll(async () => {
  await closeWorker();
  await replies.close();
  await telegram.close();
  await dropPrefix(prefix);
});

const texts = (chatId: string) => telegram.shown(Number(chatId)).map((m) => String(m.message.text));

describe("live previews through the ordered delivery queue", () => {
  it("skips preview updates a newer one overtook, then edits the preview into the first segment", async () => {
    const target = nextTarget();
    const reply = replies.open("skip-stale", target, { preview: { key: "run-skip-stale" } });
    for (let i = 1; i <= 6; i++) await reply.preview?.(`draft ${i}`);
    await reply.push("The final answer.");
    await reply.end();
    expect(await reply.settled()).toEqual({ total: 1, delivered: 1, failed: 0 });
    // At most the first draft (already being sent) and the newest one reached the platform.
    const writes = telegram.callsOf("sendMessage").length + telegram.callsOf("editMessageText").length;
    expect(writes).toBeLessThanOrEqual(3);
    expect(texts(target.chatId)).toEqual(["The final answer."]);
  });

  it("a preview that starts a later part of the answer is no reply to the user's message; the first part is", async () => {
    const target = { ...nextTarget(), replyToMessageId: "77" };
    const reply = replies.open("later-part", target, { preview: { key: "run-later-part" } });
    // Two parts finished before any preview (a fast stream), then a preview of the third, taken over by it.
    await reply.push("Part one.");
    await reply.push("Part two.");
    await reply.preview?.("Part three so");
    await reply.push("Part three.");
    await reply.end();
    expect(await reply.settled()).toEqual({ total: 3, delivered: 3, failed: 0 });
    expect(texts(target.chatId)).toEqual(["Part one.", "Part two.", "Part three."]);
    const replied = telegram
      .callsOf("sendMessage")
      .filter((c) => String(c.params.chat_id) === target.chatId)
      .map((c) => (c.params.reply_parameters as { message_id?: number } | undefined)?.message_id);
    expect(replied).toEqual([77, undefined, undefined]);
  });

  it("deletes a preview no segment took over (a run that ended with nothing more to say)", async () => {
    const target = nextTarget();
    const reply = replies.open("stopped", target, { preview: { key: "run-stopped" } });
    await reply.preview?.("half an answer");
    await waitFor(() => texts(target.chatId).length === 1, "the preview");
    expect(texts(target.chatId)[0]).toMatch(/^half an answer …$/);
    await reply.end();
    await waitFor(() => texts(target.chatId).length === 0, "the preview deleted");
    expect(telegram.callsOf("deleteMessage")).toHaveLength(1);
  });

  it("sends the segment as a new message when the preview was deleted on the platform", async () => {
    const target = nextTarget();
    const reply = replies.open("gone", target, { preview: { key: "run-gone" } });
    await reply.preview?.("a preview someone deletes");
    await waitFor(() => texts(target.chatId).length === 1, "the preview");
    const [shown] = telegram.shown(Number(target.chatId));
    if (shown) shown.deleted = true;
    await reply.push("Still delivered.");
    await reply.end();
    expect(await reply.settled()).toEqual({ total: 1, delivered: 1, failed: 0 });
    expect(texts(target.chatId)).toEqual(["Still delivered."]);
  });

  it("deletes a preview the platform keeps but will not edit; the answer follows as new messages, once", async () => {
    const target = nextTarget();
    const reply = replies.open("uneditable", target, { preview: { key: "run-uneditable" } });
    await reply.preview?.("the first draft");
    await waitFor(() => texts(target.chatId).length === 1, "the preview");
    telegram.failNext(
      "editMessageText",
      { error_code: 400, description: "Bad Request: message can't be edited" },
      20,
    );
    await reply.preview?.("the first draft, and more");
    await reply.push("Part one.");
    await reply.push("Part two.", undefined, { last: true });
    expect(await reply.settled()).toEqual({ total: 2, delivered: 2, failed: 0 });
    expect(texts(target.chatId)).toEqual(["Part one.", "Part two."]);
    expect(
      telegram.callsOf("deleteMessage").filter((c) => String(c.params.chat_id) === target.chatId),
    ).toHaveLength(1);
  });

  it("keeps the chat's interval between every platform write: the preview's sends and edits, and the segments", async () => {
    const target = nextTarget();
    const reply = replies.open("paced", target, { preview: { key: "run-paced" } });
    await reply.preview?.("draft one");
    await waitFor(() => texts(target.chatId).length === 1, "the preview");
    await reply.preview?.("draft two");
    await reply.push("Part one.");
    await reply.push("Part two.", undefined, { last: true });
    expect(await reply.settled()).toEqual({ total: 2, delivered: 2, failed: 0 });
    const writes = ["sendMessage", "editMessageText", "deleteMessage"]
      .flatMap((method) => telegram.callsOf(method))
      .filter((c) => String(c.params.chat_id) === target.chatId)
      .map((c) => c.at)
      .sort((a, b) => a - b);
    expect(writes.length).toBeGreaterThanOrEqual(3);
    // 300 ms apart by the hub's clock before each write; a few ms of the fake's own receipt times aside.
    for (let i = 1; i < writes.length; i++) expect(writes[i]! - writes[i - 1]!).toBeGreaterThanOrEqual(280);
  });
});
