import { Api, Bot, GrammyError } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeTelegram,
  groupText,
  mentionEntities,
  parseTelegramHtml,
  privateText,
  startFakeTelegram,
  telegramErrors,
} from "../src/telegram/index.js";

// These tests drive the fake through grammY's real client, so they also pin down that the fake speaks
// the wire format grammY expects (URL layout, JSON bodies, error envelopes).

let fake: FakeTelegram;
let api: Api;

beforeEach(async () => {
  fake = await startFakeTelegram();
  api = new Api(fake.token, { apiRoot: fake.apiRoot });
});

afterEach(async () => {
  await fake.close();
});

/** Runs `promise` and returns the GrammyError it rejects with. */
async function grammyError(promise: Promise<unknown>): Promise<GrammyError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof GrammyError)) throw new Error(`expected a GrammyError, got ${String(err)}`);
  return err;
}

describe("fake Telegram: basics", () => {
  it("answers getMe with the bot user", async () => {
    const me = await api.getMe();
    expect(me).toMatchObject({
      id: 123456,
      is_bot: true,
      username: "hub_test_bot",
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
    });
    expect(fake.calls.map((c) => c.method)).toEqual(["getMe"]);
  });

  it("answers 401 to a wrong token and 404 to an unknown method", async () => {
    const wrong = new Api("999:WRONG", { apiRoot: fake.apiRoot });
    const unauthorized = await grammyError(wrong.getMe());
    expect(unauthorized.error_code).toBe(401);
    expect(unauthorized.description).toBe("Unauthorized");
    const unknown = await grammyError(api.raw.setMyCommands({ commands: [] }));
    expect(unknown.error_code).toBe(404);
    expect(unknown.description).toBe("Not Found");
  });

  it("lets tests stub extra methods", async () => {
    fake.stub("setMyCommands", () => true);
    await expect(api.setMyCommands([{ command: "start", description: "Start" }])).resolves.toBe(true);
  });
});

describe("fake Telegram: getUpdates", () => {
  it("assigns update ids from 1000 and drops updates below the offset", async () => {
    const a = fake.pushUpdate(privateText({ chatId: 1, fromId: 1, text: "one" }));
    const b = fake.pushUpdate(privateText({ chatId: 1, fromId: 1, text: "two" }));
    const c = fake.pushUpdate(privateText({ chatId: 1, fromId: 1, text: "three" }));
    expect([a, b, c]).toEqual([1000, 1001, 1002]);

    // Without an offset nothing is confirmed: the same updates come back again.
    expect((await api.getUpdates()).map((u) => u.update_id)).toEqual([1000, 1001, 1002]);
    expect((await api.getUpdates({ limit: 2 })).map((u) => u.update_id)).toEqual([1000, 1001]);
    // offset confirms everything below it.
    const next = await api.getUpdates({ offset: 1002 });
    expect(next.map((u) => u.update_id)).toEqual([1002]);
    expect(next[0]?.message?.text).toBe("three");
    expect(await api.getUpdates({ offset: 1003 })).toEqual([]);
    expect(fake.pendingUpdates).toEqual([]);
  });

  it("long polls until an update is pushed", async () => {
    const started = Date.now();
    const poll = api.getUpdates({ offset: 0, timeout: 10 });
    // Give the request time to arrive and park before the update shows up.
    await new Promise((r) => setTimeout(r, 150));
    expect(fake.callsOf("getUpdates")).toHaveLength(1);
    fake.pushUpdate(privateText({ chatId: 5, fromId: 5, text: "wake" }));
    const updates = await poll;
    expect(updates.map((u) => u.message?.text)).toEqual(["wake"]);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("answers an empty list after the long-poll timeout", async () => {
    const started = Date.now();
    expect(await api.getUpdates({ timeout: 1 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it("terminates the first of two concurrent long polls with 409", async () => {
    const first = api.getUpdates({ timeout: 10 });
    await new Promise((r) => setTimeout(r, 50));
    const second = api.getUpdates({ timeout: 10 });
    const err = await grammyError(first);
    expect(err.error_code).toBe(409);
    expect(err.description).toBe(
      "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
    );
    fake.pushUpdate(privateText({ chatId: 1, fromId: 1, text: "for the second" }));
    expect((await second).map((u) => u.message?.text)).toEqual(["for the second"]);
  });

  it("refuses getUpdates with 409 while a webhook is set", async () => {
    await api.setWebhook("https://example.com/hook", { secret_token: "s3cret" });
    expect(fake.webhook).toEqual({ url: "https://example.com/hook", secret_token: "s3cret" });
    const err = await grammyError(api.getUpdates());
    expect(err.error_code).toBe(409);
    expect(err.description).toBe(
      "Conflict: can't use getUpdates method while webhook is active; " +
        "use deleteWebhook to delete the webhook first",
    );
    expect((await api.getWebhookInfo()).url).toBe("https://example.com/hook");
    fake.pushUpdate(privateText({ chatId: 1, fromId: 1, text: "dropped" }));
    await api.deleteWebhook({ drop_pending_updates: true });
    expect(await api.getUpdates()).toEqual([]);
  });

  it("feeds a real grammY bot by long polling and stops cleanly", async () => {
    const bot = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } });
    const seen: string[] = [];
    bot.on("message:text", async (ctx) => {
      seen.push(ctx.message.text);
      await ctx.reply(`echo: ${ctx.message.text}`);
    });
    fake.pushUpdate(privateText({ chatId: 42, fromId: 42, text: "hello" }));
    const running = bot.start({ timeout: 5 });
    await fake.waitForCall("sendMessage");
    await bot.stop();
    await running;
    expect(seen).toEqual(["hello"]);
    expect(fake.sent(42).map((p) => p.text)).toEqual(["echo: hello"]);
    // bot.stop() confirmed the update, so it is gone.
    expect(fake.pendingUpdates).toEqual([]);
  });
});

describe("fake Telegram: sendMessage", () => {
  it("accepts valid HTML and returns the visible text with entities", async () => {
    const msg = await api.sendMessage(7, '<b>bold</b> &amp; <a href="https://x.dev/?a=1&amp;b=2">link</a>', {
      parse_mode: "HTML",
    });
    expect(msg.text).toBe("bold & link");
    expect(msg.chat).toEqual({ id: 7, type: "private", first_name: "User" });
    expect(msg.from?.id).toBe(fake.botId);
    expect(msg.entities).toEqual([
      { type: "bold", offset: 0, length: 4 },
      { type: "text_link", offset: 7, length: 4, url: "https://x.dev/?a=1&b=2" },
    ]);
    const second = await api.sendMessage(7, "plain");
    expect(second.message_id).toBe(msg.message_id + 1);
    expect(fake.sent(7).map((p) => p.text)).toHaveLength(2);
  });

  it("merges <pre><code class> into one pre entity with a language", () => {
    const parsed = parseTelegramHtml('<pre><code class="language-ts">const a = 1 &lt; 2;</code></pre>');
    expect(parsed).toEqual({
      ok: true,
      text: "const a = 1 < 2;",
      entities: [{ type: "pre", offset: 0, length: 16, language: "ts" }],
    });
  });

  it("rejects invalid HTML with 400 can't parse entities", async () => {
    const cases: Array<[string, string]> = [
      ["<foo>x</foo>", 'Unsupported start tag "foo" at byte offset 0'],
      ["a < b", 'Unsupported start tag "" at byte offset 2'],
      ["<b>x</i>", 'Unmatched end tag at byte offset 4, expected "</b>", found "</i>"'],
      ["<b>x", 'Can\'t find end tag corresponding to start tag "b"'],
      ["x</b>", "Unexpected end tag at byte offset 1"],
      ["Tom & Jerry", 'Unescaped "&" at byte offset 4'],
      ['<span class="x">y</span>', 'Tag "span" must have class "tg-spoiler" at byte offset 0'],
    ];
    for (const [html, detail] of cases) {
      const err = await grammyError(api.sendMessage(1, html, { parse_mode: "HTML" }));
      expect(err.error_code).toBe(400);
      expect(err.description).toBe(`Bad Request: can't parse entities: ${detail}`);
    }
    expect(fake.sent()).toEqual([]);
    expect(fake.calls.every((c) => c.error_code === 400)).toBe(true);
  });

  it("accepts every allowed tag", async () => {
    const html =
      "<b>b</b><strong>s</strong><i>i</i><em>e</em><u>u</u><ins>n</ins><s>s</s><strike>k</strike>" +
      '<del>d</del><code>c</code><pre>p</pre><a href="tg://user?id=1">a</a><blockquote>q</blockquote>' +
      '<blockquote expandable>x</blockquote><tg-spoiler>t</tg-spoiler><span class="tg-spoiler">z</span>' +
      "&lt;&gt;&quot;&#33;";
    const msg = await api.sendMessage(1, html, { parse_mode: "HTML" });
    expect(msg.text).toBe('bsieunskdcpaqxtz<>"!');
    expect(msg.entities?.map((e) => e.type)).toContain("expandable_blockquote");
  });

  it("refuses text longer than 4096 visible characters", async () => {
    // 4096 visible characters are fine even though the HTML is longer.
    await api.sendMessage(1, `<b>${"&amp;".repeat(4096)}</b>`, { parse_mode: "HTML" });
    const err = await grammyError(api.sendMessage(1, "x".repeat(4097)));
    expect(err.description).toBe("Bad Request: message is too long");
    const empty = await grammyError(api.sendMessage(1, "<b> </b>", { parse_mode: "HTML" }));
    expect(empty.description).toBe("Bad Request: message text is empty");
  });

  it("echoes the thread and links replies to known messages", async () => {
    const inbound = groupText({ chatId: -1001, fromId: 9, text: "hi", isForum: true, threadId: 77 });
    fake.pushUpdate(inbound);
    const msg = await api.sendMessage(-1001, "answer", {
      message_thread_id: 77,
      reply_parameters: { message_id: inbound.message.message_id },
    });
    expect(msg.message_thread_id).toBe(77);
    expect(msg.is_topic_message).toBe(true);
    expect(msg.chat).toMatchObject({ id: -1001, type: "supergroup", is_forum: true });
    expect(msg.reply_to_message?.text).toBe("hi");
    const missing = await grammyError(
      api.sendMessage(-1001, "x", { reply_parameters: { message_id: 99999 } }),
    );
    expect(missing.description).toBe("Bad Request: message to be replied not found");
  });

  it("edits the bot's messages and refuses no-op edits", async () => {
    const msg = await api.sendMessage(3, "draft");
    const edited = await api.editMessageText(3, msg.message_id, "<i>final</i>", { parse_mode: "HTML" });
    expect(edited).toMatchObject({ text: "final", entities: [{ type: "italic", offset: 0, length: 5 }] });
    const same = await grammyError(
      api.editMessageText(3, msg.message_id, "<i>final</i>", { parse_mode: "HTML" }),
    );
    expect(same.description).toMatch(/^Bad Request: message is not modified/);
    const gone = await grammyError(api.editMessageText(3, 12345, "x"));
    expect(gone.description).toBe("Bad Request: message to edit not found");
  });

  it("accepts chat actions and serves files", async () => {
    await expect(api.sendChatAction(3, "typing")).resolves.toBe(true);
    const file = await api.getFile("abc");
    expect(file.file_path).toBe("files/abc");
    fake.setFile("abc", "hello bytes");
    const res = await fetch(`${fake.apiRoot}/file/bot${fake.token}/${file.file_path}`);
    expect(await res.text()).toBe("hello bytes");
  });
});

describe("fake Telegram: failure injection", () => {
  it("answers 429 with parameters.retry_after, then recovers", async () => {
    fake.failNext("sendMessage", telegramErrors.tooManyRequests(7), 2);
    for (let k = 0; k < 2; k++) {
      const err = await grammyError(api.sendMessage(1, "hi"));
      expect(err.error_code).toBe(429);
      expect(err.description).toBe("Too Many Requests: retry after 7");
      expect(err.parameters.retry_after).toBe(7);
    }
    await expect(api.sendMessage(1, "hi")).resolves.toMatchObject({ text: "hi" });
    expect(fake.callsOf("sendMessage").map((c) => c.error_code)).toEqual([429, 429, undefined]);
    expect(fake.sent(1)).toHaveLength(1);
  });

  it("derives retry_after from the description and injects 403", async () => {
    fake.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 3" });
    expect((await grammyError(api.sendMessage(1, "x"))).parameters.retry_after).toBe(3);
    fake.failNext("sendmessage", telegramErrors.blockedByUser());
    const blocked = await grammyError(api.sendMessage(1, "x"));
    expect(blocked.error_code).toBe(403);
    expect(blocked.description).toBe("Forbidden: bot was blocked by the user");
  });
});

describe("fake Telegram: webhooks", () => {
  it("posts updates with the secret token header", async () => {
    const received: Array<{ secret: string | undefined; body: string }> = [];
    const { createServer } = await import("node:http");
    const hook = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => {
        body += c.toString("utf8");
      });
      req.on("end", () => {
        const header = req.headers["x-telegram-bot-api-secret-token"];
        received.push({ secret: typeof header === "string" ? header : undefined, body });
        res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((r) => hook.listen(0, "127.0.0.1", () => r()));
    const address = hook.address();
    const port = typeof address === "object" && address ? address.port : 0;
    try {
      await api.setWebhook(`http://127.0.0.1:${port}/hook`, { secret_token: "abc" });
      const answer = await fake.postWebhook(privateText({ chatId: 1, fromId: 1, text: "via hook" }));
      expect(answer).toEqual({ status: 200, body: "ok" });
      await fake.postWebhook(privateText({ chatId: 1, fromId: 1, text: "wrong" }), "nope");
      await fake.postWebhook(privateText({ chatId: 1, fromId: 1, text: "none" }), null);
      await fake.postWebhookRaw("{not json", "abc");
      expect(received.map((r) => r.secret)).toEqual(["abc", "nope", undefined, "abc"]);
      const first: unknown = JSON.parse(received[0]?.body ?? "");
      expect(first).toMatchObject({ update_id: 1000, message: { text: "via hook" } });
      expect(received[3]?.body).toBe("{not json");
    } finally {
      await new Promise((r) => hook.close(r));
    }
  });
});

describe("update builders", () => {
  it("builds private messages with command entities", () => {
    const update = privateText({ chatId: 10, fromId: 10, text: "/start@hub_test_bot hi", username: "alice" });
    expect(update.message).toMatchObject({
      from: { id: 10, is_bot: false, first_name: "Alice", username: "alice" },
      chat: { id: 10, type: "private", first_name: "Alice", username: "alice" },
      text: "/start@hub_test_bot hi",
      entities: [{ type: "bot_command", offset: 0, length: 19 }],
    });
    expect(typeof update.message.date).toBe("number");
  });

  it("builds forum topic messages like Telegram (topic creation as reply_to_message)", () => {
    const update = groupText({
      chatId: -100123,
      fromId: 4,
      text: "hey @hub_test_bot",
      isForum: true,
      threadId: 5,
    });
    expect(update.message).toMatchObject({
      chat: { id: -100123, type: "supergroup", title: "Test Group", is_forum: true },
      message_thread_id: 5,
      is_topic_message: true,
      entities: [{ type: "mention", offset: 4, length: 13 }],
      reply_to_message: { message_id: 5, forum_topic_created: { name: "Topic 5" } },
    });
    const reply = groupText({ chatId: -100123, fromId: 4, text: "re", replyTo: update });
    expect(reply.message.reply_to_message?.message_id).toBe(update.message.message_id);
    expect(reply.message.reply_to_message).not.toHaveProperty("reply_to_message");
  });

  it("measures entities in UTF-16 code units", () => {
    expect(mentionEntities("😀 @some_user and /help, mail a@b.com")).toEqual([
      { type: "mention", offset: 3, length: 10 },
      { type: "bot_command", offset: 18, length: 5 },
    ]);
  });
});
