import { ChannelRefusedError, captureLogs, createLogger } from "@hub/core";
import { afterEach, describe, expect, it } from "vitest";
import {
  groupText,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
  TelegramApiError,
  telegramErrors,
} from "../../../test/fakes/src/index.js";
import { startTestHub, type TestHub } from "../../../test/support/hub.js";
import { waitFor } from "../../../test/support/redis.js";
import { describeTelegramError } from "../src/errors.js";
import { TelegramAdapter, type TelegramAdapterOptions } from "../src/index.js";
import { memoryState, outboundOf } from "./harness.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A hub with a Telegram adapter against the fake Bot API and a fake model; logs captured. */
async function setup(options: { mode?: "webhook"; model?: boolean; groups?: Record<string, object> } = {}) {
  const fake = await startFakeTelegram();
  const model = await startFakeOpenAI();
  const { logger, lines } = captureLogs("debug");
  const state = memoryState();
  const webhook = options.mode === "webhook";
  let hub: TestHub | undefined;
  const adapter = new TelegramAdapter({
    botToken: fake.token,
    apiRoot: fake.apiRoot,
    state,
    logger,
    pollTimeoutSeconds: 1,
    conflictBackoffMs: 1000,
    ...(webhook
      ? {
          mode: "webhook" as const,
          webhookUrl: "http://127.0.0.1:1/telegram/webhook",
          webhookSecret: "s3cret-s3cret-s3cret",
        }
      : {}),
  });
  hub = await startTestHub(
    {
      agent: { model: "fake/m" },
      models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
      channels: {
        telegram: {
          dmPolicy: "allowlist",
          allowFrom: ["4242"],
          ...(options.groups ? { groups: options.groups } : {}),
        },
      },
    },
    "tg",
    [adapter],
    logger,
  );
  cleanups.push(async () => {
    await hub?.dispose();
    await fake.close();
    await model.close();
  });
  return { fake, model, hub, lines, state, adapter };
}

/** A Telegram adapter (not started) polling its own fake Bot API, without a hub; both stopped after the test. */
async function bareAdapter(options: Partial<TelegramAdapterOptions> = {}) {
  const fake = await startFakeTelegram();
  const adapter = new TelegramAdapter({
    botToken: fake.token,
    apiRoot: fake.apiRoot,
    state: memoryState(),
    logger: createLogger({ level: "silent" }),
    pollTimeoutSeconds: 1,
    ...options,
  });
  cleanups.push(async () => {
    await adapter.stop();
    await fake.close();
  });
  return { fake, adapter };
}

describe("telegram adapter", () => {
  it("webhook mode: sets the webhook with a secret; a wrong secret gets 401, a non-JSON body 200 and one log line", async () => {
    const { fake, hub, model, lines } = await setup({ mode: "webhook" });
    expect(fake.webhook).toMatchObject({ secret_token: "s3cret-s3cret-s3cret" });
    const url = `http://127.0.0.1:${hub.port}/telegram/webhook`;
    const update = privateText({ chatId: 4242, fromId: 4242, text: "via webhook" });
    const wrong = await fetch(url, {
      method: "POST",
      headers: { "x-telegram-bot-api-secret-token": "nope" },
      body: JSON.stringify(update),
    });
    expect(wrong.status).toBe(401);
    const missing = await fetch(url, { method: "POST", body: JSON.stringify(update) });
    expect(missing.status).toBe(401);
    const garbage = await fetch(url, {
      method: "POST",
      headers: { "x-telegram-bot-api-secret-token": "s3cret-s3cret-s3cret" },
      body: "{not json",
    });
    // Telegram retries a 4xx: an update that can never be read is acknowledged and dropped, said once.
    expect(garbage.status).toBe(200);
    expect(lines.filter((l) => l.includes("cannot be read"))).toEqual([
      expect.stringContaining("webhook body cannot be read; acknowledged and dropped"),
    ]);
    expect(model.requests).toHaveLength(0);
    model.script({ text: "Got it." });
    const ok = await fetch(url, {
      method: "POST",
      headers: { "x-telegram-bot-api-secret-token": "s3cret-s3cret-s3cret" },
      body: JSON.stringify({ update_id: 1, ...update }),
    });
    expect(ok.status).toBe(200);
    await waitFor(() => fake.sent("4242").length === 1, "the webhook message answered");
    expect(outboundOf(fake.sent("4242")[0]!).text).toBe("Got it.");
  });

  it("a webhook Telegram refuses (400) fails the channel with the keys to fix, not a retry loop", async () => {
    const { adapter, fake } = await bareAdapter({
      mode: "webhook",
      webhookUrl: "http://127.0.0.1:1/telegram/webhook",
      webhookSecret: "Good_secret-0123456789",
    });
    fake.stub("setWebhook", () => {
      throw new TelegramApiError({
        error_code: 400,
        description: "Bad Request: bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443",
      });
    });
    const error = await adapter.start(async () => ({ kind: "accepted" })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelRefusedError);
    expect((error as Error).message).toMatch(
      /Telegram refused the webhook \(400 Bad Request: bad webhook: .*\); fix channels\.telegram\.webhookUrl .* or channels\.telegram\.webhookSecret/,
    );
    expect(adapter.status()).toMatchObject({ state: "failed" });
  });

  it("a webhook secret Telegram would refuse fails the channel before any call, naming the key", async () => {
    const { adapter, fake } = await bareAdapter({
      mode: "webhook",
      webhookUrl: "http://127.0.0.1:1/telegram/webhook",
      webhookSecret: "my webhook secret!!",
    });
    const error = await adapter.start(async () => ({ kind: "accepted" })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelRefusedError);
    expect((error as Error).message).toMatch(/channels\.telegram\.webhookSecret may hold only letters/);
    expect(fake.callsOf("setWebhook")).toEqual([]);
  });

  it("while the hub drains, a webhook update gets 503 with Retry-After and is not taken", async () => {
    const { hub, model } = await setup({ mode: "webhook" });
    hub.operations.startDraining();
    const res = await fetch(`http://127.0.0.1:${hub.port}/telegram/webhook`, {
      method: "POST",
      headers: { "x-telegram-bot-api-secret-token": "s3cret-s3cret-s3cret" },
      body: JSON.stringify({
        update_id: 7,
        ...privateText({ chatId: 4242, fromId: 4242, text: "too late" }),
      }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(model.requests).toHaveLength(0);
  });

  it("while the hub drains, polling stops and keeps its offset: Telegram keeps the update for the next holder", async () => {
    const { fake, hub, model, state } = await setup();
    await waitFor(() => fake.callsOf("getUpdates").length > 0, "the first poll");
    hub.operations.startDraining();
    const id = fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "during the drain" }));
    // Polling ends (a standby process of the installation would poll now): no poll after a moment.
    await new Promise((r) => setTimeout(r, 300));
    const polls = fake.callsOf("getUpdates").length;
    await new Promise((r) => setTimeout(r, 1500));
    expect(fake.callsOf("getUpdates")).toHaveLength(polls);
    expect(fake.pendingUpdates.map((u) => u.update_id)).toContain(id);
    expect([...state.values.values()].every((offset) => Number(offset) <= id)).toBe(true);
    expect(model.requests).toHaveLength(0);
  });

  // Refusals of the chat itself: the segment fails for good, without retries and without a note tried in its place.
  it.each([
    ["a 403 'bot was blocked'", telegramErrors.blockedByUser()],
    ["a 400 'chat not found'", telegramErrors.chatNotFound()],
  ])("%s fails the segment for good: no retry, no note in its place", async (_name, refusal) => {
    const { fake, hub, model } = await setup();
    fake.failNext("sendMessage", refusal, 1);
    model.script({ text: "You will not see this." });
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "hi" }));
    const runId = await waitForRun(hub);
    await waitFor(async () => (await hub.replies.status(runId)).settled, "reply settled");
    expect(await hub.replies.status(runId)).toMatchObject({ delivered: 0, failed: 1 });
    expect(fake.callsOf("sendMessage")).toHaveLength(1);
  });

  it("resends a segment as plain text when Telegram cannot parse our HTML", async () => {
    const { fake, model } = await setup();
    fake.failNext("sendMessage", telegramErrors.cantParseEntities(), 1);
    model.script({ text: "Some **bold** words." });
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "format please" }));
    await waitFor(() => fake.sent("4242").length === 1, "the plain-text resend");
    const [sent] = fake.sent("4242");
    expect(sent?.parse_mode).toBeUndefined();
    expect(sent?.text).toBe("Some bold words.");
    expect(fake.callsOf("sendMessage")).toHaveLength(2);
  });

  it("paces sends to one chat at about one message per second", async () => {
    const { fake, model } = await setup();
    const part = (n: number) => `Part ${n} ${"word ".repeat(600)}`.trim();
    model.script({ text: [1, 2, 3].map(part).join("\n\n") });
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "three parts" }));
    await waitFor(() => fake.sent("4242").length === 3, "three messages", 15_000);
    const at = fake.callsOf("sendMessage").map((c) => c.at);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(950);
  }, 20_000);

  it("typing is shown while the run is active and stops when it ends", async () => {
    const { fake, model } = await setup();
    model.script({ text: "slow answer", chunkSize: 1, delayMs: 600 });
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "think hard" }));
    await waitFor(() => fake.sent("4242").length === 1, "answer", 20_000);
    const typing = fake.callsOf("sendChatAction");
    expect(typing.length).toBeGreaterThanOrEqual(2);
    expect(typing[0]?.params).toMatchObject({ chat_id: 4242, action: "typing" });
    const after = typing.length;
    await new Promise((r) => setTimeout(r, 5000));
    expect(fake.callsOf("sendChatAction").length).toBe(after);
  }, 30_000);

  it("typing shows only once a run has taken about a second: a quick answer costs no typing call", async () => {
    const { fake, model } = await setup();
    model.script({ text: "quick answer" });
    const askedAt = Date.now();
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "hello" }));
    await waitFor(() => fake.sent("4242").length === 1, "answer", 10_000);
    // Past the typing delay: a typing call that was only late would show up now. On a quiet machine
    // there is none; on a busy one the run may outlast the delay, and its typing comes after it.
    await new Promise((r) => setTimeout(r, 1500));
    for (const call of fake.callsOf("sendChatAction")) expect(call.at - askedAt).toBeGreaterThanOrEqual(990);
  }, 20_000);

  it("a reply in a forum's General topic is answered in General: its reply chain's thread id is no topic to send to", async () => {
    const forum = -1001234567;
    const { fake, model } = await setup({ groups: { [String(forum)]: { requireMention: true } } });
    model.script({ text: "first answer" }, { text: "second answer" });
    fake.pushUpdate(
      groupText({ chatId: forum, fromId: 4242, text: `@${fake.botUsername} hi`, isForum: true }),
    );
    await waitFor(() => fake.shown(forum).length === 1, "the answer to the mention", 20_000);
    const answer = fake.shown(forum)[0]!.message;
    // A reply to it without a mention, as Telegram delivers it in General: message_thread_id is the answer's id.
    fake.pushUpdate(
      groupText({ chatId: forum, fromId: 4242, text: "and then?", isForum: true, replyTo: answer }),
    );
    await waitFor(() => fake.shown(forum).length === 2, "the answer to the reply", 20_000);
    expect(fake.shown(forum).map((m) => m.message.text)).toEqual(["first answer", "second answer"]);
    expect(fake.callsOf("sendMessage").map((c) => c.params.message_thread_id)).toEqual([
      undefined,
      undefined,
    ]);
    // One session: the reply's turn had the first exchange in its history.
    expect(JSON.stringify(model.requests[1])).toContain("first answer");
  }, 30_000);

  it("an answer to a group upgraded to a supergroup goes to the supergroup, as no reply", async () => {
    const group = -42424242;
    const supergroup = -1009876543210;
    const { fake, model } = await setup({ groups: { [String(group)]: { requireMention: true } } });
    // Two parts: the second goes to the supergroup at once, the upgrade learned from the first's refusal.
    const part = (n: number) => `Part ${n}. ${"words to fill the part ".repeat(90)}`;
    model.script({ text: `${part(1)}\n\n${part(2)}` });
    const update = groupText({ chatId: group, fromId: 4242, text: `@${fake.botUsername} hi`, messageId: 31 });
    update.message.chat = { id: group, type: "group", title: "Team" };
    fake.failNext("sendMessage", telegramErrors.groupUpgraded(supergroup));
    fake.pushUpdate(update);
    await waitFor(() => fake.sent(supergroup).length === 2, "the answer in the supergroup", 20_000);
    expect(fake.sent(supergroup).map((m) => String(m.text).slice(0, 7))).toEqual(["Part 1.", "Part 2."]);
    expect(fake.sent(supergroup)[0]?.reply_parameters).toBeUndefined();
    expect(fake.callsOf("sendMessage").map((c) => String(c.params.chat_id))).toEqual([
      String(group),
      String(supergroup),
      String(supergroup),
    ]);
  }, 30_000);

  it("an album (updates sharing a media_group_id) is one message: one run sees every photo and its caption, one answer", async () => {
    const { fake, model } = await setup();
    model.script({ text: "three photos" }, { text: "and a text" });
    const photoUpdate = (n: number, caption?: string) => {
      const fileId = `album-photo-${n}`;
      fake.setFile(fileId, Buffer.from(`png ${n}`));
      const { message } = privateText({ chatId: 4242, fromId: 4242, text: "", messageId: 500 + n });
      const { text: _none, ...base } = message;
      const photo = [{ file_id: fileId, file_unique_id: `u${fileId}`, file_size: 5, width: 1, height: 1 }];
      return { message: { ...base, media_group_id: "13579", photo, ...(caption ? { caption } : {}) } };
    };
    // As Telegram sends an album: one update per item, the caption on the first only; then a text. The
    // hub's poll is parked: it is answered with the first item alone, the others come a moment later.
    await fake.waitForCall("getUpdates");
    await new Promise((r) => setTimeout(r, 300));
    fake.pushUpdate(photoUpdate(1, "our trip"));
    await new Promise((r) => setTimeout(r, 30));
    fake.pushUpdate(photoUpdate(2));
    fake.pushUpdate(photoUpdate(3));
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "what do you see?", messageId: 504 }));
    await waitFor(() => fake.sent("4242").length === 2, "the two answers", 20_000);
    expect(fake.sent("4242").map((m) => m.text)).toEqual(["three photos", "and a text"]);
    expect(model.requests).toHaveLength(2);
    const asked = JSON.stringify(model.requests[0]?.messages.at(-1));
    expect(asked).toContain("our trip");
    // The model takes no images here: each photo is a line of its own.
    expect(asked.match(/\[image: /g)).toHaveLength(3);
  }, 30_000);

  it("a 409 Conflict is reported once, without a retry storm, and polling resumes after it", async () => {
    const { fake, lines, model } = await setup();
    await fake.waitForCall("getUpdates");
    fake.failNext(
      "getUpdates",
      {
        error_code: 409,
        description:
          "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
      },
      3,
    );
    await new Promise((r) => setTimeout(r, 4500));
    const conflicts = lines.filter((l) => l.includes("409 Conflict"));
    expect(conflicts).toHaveLength(1);
    expect(fake.callsOf("getUpdates").filter((c) => c.error_code === 409).length).toBeLessThanOrEqual(3);
    model.script({ text: "Back." });
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "after the conflict" }));
    await waitFor(() => fake.sent("4242").length === 1, "answer after the conflict", 10_000);
  }, 20_000);

  it("a getUpdates answer that is not a list of updates is a failed call: polling backs off and goes on", async () => {
    const { fake, lines, model, adapter } = await setup();
    await fake.waitForCall("getUpdates");
    fake.stub("getUpdates", () => ({ update_id: 5 }));
    await waitFor(() => adapter.status().state === "reconnecting", "reconnecting", 10_000);
    expect(adapter.status().reason).toMatch(/answered object where Telegram answers a list of updates/);
    fake.unstub("getUpdates");
    model.script({ text: "Still here." });
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "are you there" }));
    await waitFor(() => fake.sent("4242").length === 1, "the answer after the bad batch", 15_000);
    expect(adapter.status().state).toBe("connected");
    expect(lines.some((l) => l.includes("telegram polling stopped"))).toBe(false);
  }, 30_000);

  it("updates without a usable update_id make polling wait, not spin; the next real one clears them", async () => {
    const { fake, model } = await setup();
    await fake.waitForCall("getUpdates");
    const before = fake.callsOf("getUpdates").length;
    const message = privateText({ chatId: 4242, fromId: 4242, text: "string id" }).message;
    fake.pushUpdate({ update_id: "900", message });
    await new Promise((r) => setTimeout(r, 2000));
    // Spinning asked thousands of times in this window; waiting with backoff asks a handful.
    expect(fake.callsOf("getUpdates").length - before).toBeLessThan(10);
    model.script({ text: "Answered." });
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "a real one" }));
    await waitFor(() => fake.sent("4242").length === 1, "the real one's answer", 15_000);
  }, 30_000);

  it("a 429 on getUpdates waits its retry_after before asking again", async () => {
    const { fake } = await setup();
    await fake.waitForCall("getUpdates");
    fake.failNext(
      "getUpdates",
      { error_code: 429, description: "Too Many Requests: retry after 3", retry_after: 3 },
      1,
    );
    await waitFor(() => fake.callsOf("getUpdates").some((c) => c.error_code === 429), "the 429");
    const limitedAt = fake.callsOf("getUpdates").find((c) => c.error_code === 429)!.at;
    await waitFor(
      () => fake.callsOf("getUpdates").some((c) => c.at > limitedAt),
      "the next getUpdates",
      10_000,
    );
    const next = fake.callsOf("getUpdates").find((c) => c.at > limitedAt)!;
    expect(next.at - limitedAt).toBeGreaterThanOrEqual(2900);
  }, 20_000);

  it("closes its Bot API connections when it stops (twice is fine): a call after it fails, none reaches the fake", async () => {
    const { fake, adapter } = await bareAdapter();
    await adapter.start(async () => ({ kind: "accepted" }));
    await adapter.bot.api.getMe();
    await adapter.stop();
    await adapter.stop(); // a second stop (the hub's, after a failed start's) is no error
    const calls = fake.calls.length;
    const error = await adapter.bot.api.getMe().catch((e: unknown) => e);
    expect(describeTelegramError(error)).toMatch(/getMe failed, reason: .*(destroyed|closed)/i);
    expect(fake.calls.length).toBe(calls);
  }, 20_000);

  it("an edited message taken as new gets its reaction on Telegram's message_id, not the hub's edit id", async () => {
    const { fake, adapter } = await bareAdapter({ editedMessages: "as-new" });
    const seen: string[] = [];
    await adapter.start(async (f) => {
      seen.push(f.messageId);
      return { kind: "accepted" };
    });
    const original = privateText({ chatId: 77, fromId: 77, text: "first words", messageId: 501 });
    fake.pushUpdate(original);
    fake.pushUpdate({
      edited_message: { ...original.message, text: "better words", edit_date: 1_700_000_500 },
    });
    await waitFor(() => seen.length === 2, "the message and its edit");
    expect(seen[1]).toBe("501:edit:1700000500");
    await adapter.react({ channel: "telegram", accountId: "default", chatId: "77" }, seen[1]!, "👀");
    expect(fake.callsOf("setMessageReaction").map((c) => c.params.message_id)).toEqual([501]);
    // "❤️" as typed (with U+FE0F) is Telegram's "❤".
    await adapter.react({ channel: "telegram", accountId: "default", chatId: "77" }, "501", "\u2764\uFE0F");
    expect(fake.callsOf("setMessageReaction").at(-1)?.params.reaction).toEqual([
      { type: "emoji", emoji: "\u2764" },
    ]);
  }, 20_000);

  it("an edited channel post is asked for and taken as new when edits and channel posts are both on", async () => {
    const { fake, adapter } = await bareAdapter({ editedMessages: "as-new", channelPosts: true });
    const seen: string[] = [];
    await adapter.start(async (f) => {
      seen.push(`${f.messageId} ${f.body}`);
      return { kind: "accepted" };
    });
    const post = {
      message_id: 601,
      date: 1_700_000_000,
      chat: { id: -1001234, type: "channel", title: "News" },
      sender_chat: { id: -1001234, type: "channel", title: "News" },
      text: "first post",
    };
    fake.pushUpdate({ channel_post: post });
    fake.pushUpdate({ edited_channel_post: { ...post, text: "post, corrected", edit_date: 1_700_000_600 } });
    await waitFor(() => seen.length === 2, "the post and its edit");
    expect(seen).toEqual(["601 first post", "601:edit:1700000600 post, corrected"]);
    expect(fake.callsOf("getUpdates").at(-1)?.params.allowed_updates).toContain("edited_channel_post");
  }, 20_000);

  it("the polling offset survives a restart: nothing processed twice, nothing skipped", async () => {
    const fake = await startFakeTelegram();
    const state = memoryState();
    const seen: string[] = [];
    const make = () =>
      new TelegramAdapter({
        botToken: fake.token,
        apiRoot: fake.apiRoot,
        state,
        logger: createLogger({ level: "silent" }),
        pollTimeoutSeconds: 1,
      });
    const first = make();
    await first.start(async (f) => {
      seen.push(f.body);
      return { kind: "accepted" };
    });
    fake.pushUpdate(privateText({ chatId: 1, fromId: 1, text: "one" }));
    await waitFor(() => seen.length === 1, "first update");
    await waitFor(() => state.values.size === 1, "offset stored");
    await first.stop();
    fake.pushUpdate(privateText({ chatId: 1, fromId: 1, text: "two" }));
    const second = make();
    await second.start(async (f) => {
      seen.push(f.body);
      return { kind: "accepted" };
    });
    await waitFor(() => seen.length === 2, "second update");
    await new Promise((r) => setTimeout(r, 1500));
    await second.stop();
    await fake.close();
    expect(seen).toEqual(["one", "two"]);
  }, 20_000);

  it("no error or status quotes the bot token, even when apiRoot's own path starts with bot", async () => {
    const token = "777777:AAHsecretSecretSecretSecret";
    const adapter = new TelegramAdapter({
      botToken: token,
      // A proxy path starting with "bot", on a port nothing listens on: the fetch error quotes the URL.
      apiRoot: "http://127.0.0.1:9/botapi",
      state: memoryState(),
      logger: createLogger({ level: "silent" }),
    });
    cleanups.push(() => adapter.stop());
    const error = await adapter.start(async () => ({ kind: "accepted" })).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/could not be reached/);
    expect((error as Error).message).toContain("/bot<token>/getMe");
    for (const shown of [(error as Error).message, JSON.stringify(adapter.status())])
      expect(shown).not.toContain("AAHsecret");
    // Quoted some other way (cut before the method, with a query): still not shown.
    for (const quoted of [`https://h/bot${token}`, `https://h/bot${token}?x=1`, `token ${token}.`])
      expect(describeTelegramError(new Error(quoted))).not.toContain("AAHsecret");
  });

  it("a failing Telegram call is logged without the bot token", async () => {
    const { fake, lines, model, hub } = await setup();
    fake.failNext("sendMessage", { error_code: 500, description: "Internal Server Error" }, 1);
    model.script({ text: "retried" });
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "hello" }));
    await waitFor(() => fake.sent("4242").length === 1, "delivered after a retry", 15_000);
    await waitForRun(hub);
    const failure = lines.filter((l) => l.includes("Internal Server Error"));
    expect(failure.length).toBeGreaterThan(0);
    const secretPart = fake.token.split(":")[1]!;
    expect(lines.join("\n")).not.toContain(secretPart);
  }, 20_000);
});

async function waitForRun(hub: TestHub): Promise<string> {
  const { Redis } = await import("ioredis");
  const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  try {
    let runId = "";
    await waitFor(async () => {
      const keys = await redis.keys(`${hub.prefix}:run:*`);
      runId = keys[0]?.split(":run:")[1] ?? "";
      return runId !== "";
    }, "a run");
    return runId;
  } finally {
    redis.disconnect();
  }
}
