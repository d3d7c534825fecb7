import { describe, expect, it } from "vitest";
import { type DiscordBotIdentity, DiscordMessageSchema, normalizeMessage } from "../src/index.js";

const BOT: DiscordBotIdentity = { id: "900", username: "hubbot", roleIds: new Set(["901"]) };
const GUILD = "500";
const CHANNEL = "600";
const THREAD = "601";
const USER = { id: "700", username: "ann", global_name: "Ann" };

function message(extra: Record<string, unknown> = {}) {
  return DiscordMessageSchema.parse({
    id: "800",
    channel_id: CHANNEL,
    guild_id: GUILD,
    channel_type: 0,
    author: USER,
    content: "hello",
    timestamp: "2026-01-02T03:04:05.000Z",
    type: 0,
    mentions: [],
    mention_roles: [],
    attachments: [],
    ...extra,
  });
}

const base = { accountId: "default", guilds: {} };
const fieldsOf = (r: ReturnType<typeof normalizeMessage>) => {
  if ("skip" in r) throw new Error(`skipped: ${r.skip}`);
  return r.fields;
};

describe("normalizeMessage", () => {
  it("a guild channel message is a group message in that channel, replying to it", () => {
    const f = fieldsOf(normalizeMessage(message(), BOT, { ...base, title: "Team #general" }));
    expect(f).toMatchObject({
      channel: "discord",
      messageId: "800",
      chat: { type: "group", id: CHANNEL, title: "Team #general" },
      sender: { id: "700", name: "Ann", username: "ann", isBot: false },
      body: "hello",
      wasMentioned: false,
      replyToMessageId: "800",
      timestamp: Date.parse("2026-01-02T03:04:05.000Z"),
    });
    expect(f.threadId).toBeUndefined();
  });

  it("a DM (channel_type 1, no guild) is direct and addressed to the bot", () => {
    const { guild_id: _g, ...dm } = message({ channel_type: 1, channel_id: "602" });
    const f = fieldsOf(normalizeMessage(DiscordMessageSchema.parse(dm), BOT, base));
    expect(f).toMatchObject({ chat: { type: "direct", id: "602" }, wasMentioned: true });
    expect(f.replyToMessageId).toBeUndefined();
  });

  it("a thread message has its parent as the chat and itself as the thread", () => {
    const f = fieldsOf(
      normalizeMessage(message({ channel_id: THREAD, channel_type: 11 }), BOT, {
        ...base,
        parentId: CHANNEL,
      }),
    );
    expect(f).toMatchObject({ chat: { type: "group", id: CHANNEL }, threadId: THREAD });
    const { channel_type: _t, ...untyped } = message({ channel_id: THREAD });
    const known = normalizeMessage(DiscordMessageSchema.parse(untyped), BOT, { ...base, parentId: CHANNEL });
    expect(fieldsOf(known)).toMatchObject({ chat: { id: CHANNEL }, threadId: THREAD });
    expect(normalizeMessage(message({ channel_id: THREAD, channel_type: 11 }), BOT, base)).toEqual({
      skip: "thread message whose parent channel is unknown",
    });
  });

  it("mentions: the bot user, one of its roles, or a reply to its message; not @everyone or another role", () => {
    const mentioned = (extra: Record<string, unknown>) =>
      fieldsOf(normalizeMessage(message(extra), BOT, base)).wasMentioned;
    expect(mentioned({ content: "<@900> hi", mentions: [{ id: "900", username: "hubbot" }] })).toBe(true);
    expect(mentioned({ content: "<@&901> hi", mention_roles: ["901"] })).toBe(true);
    expect(
      mentioned({
        type: 19,
        message_reference: { message_id: "799" },
        referenced_message: { ...message(), id: "799", author: { id: "900", username: "hubbot", bot: true } },
      }),
    ).toBe(true);
    expect(mentioned({ content: "@everyone hi", mention_everyone: true })).toBe(false);
    expect(mentioned({ content: "<@&555> hi", mention_roles: ["555"] })).toBe(false);
    expect(mentioned({ content: "<@123> hi", mentions: [{ id: "123", username: "x" }] })).toBe(false);
  });

  it("the body drops a leading mention of the bot (so `@bot /status` is a command) and names later ones", () => {
    const body = (content: string) => fieldsOf(normalizeMessage(message({ content }), BOT, base)).body;
    expect(body("<@900> /status")).toBe("/status");
    expect(body("<@!900>  <@&901> what now?")).toBe("what now?");
    expect(body("ask <@900> and <@&901>")).toBe("ask @hubbot and @hubbot");
    expect(body("<@123> hi")).toBe("<@123> hi");
  });

  it("a message that is only a mention of the bot (or its role) is read as the mention, not dropped as empty", () => {
    const body = (content: string) => fieldsOf(normalizeMessage(message({ content }), BOT, base)).body;
    expect(body("<@900>")).toBe("@hubbot");
    expect(body(" <@!900>  ")).toBe("@hubbot");
    expect(body("<@900> <@&901>")).toBe("@hubbot @hubbot");
  });

  it("the referenced message gives the reply-to context", () => {
    const f = fieldsOf(
      normalizeMessage(
        message({
          type: 19,
          message_reference: { message_id: "799" },
          referenced_message: { ...message(), id: "799", content: "the earlier words" },
        }),
        BOT,
        base,
      ),
    );
    expect(f.replyTo).toEqual({ messageId: "799", senderId: "700", body: "the earlier words" });
  });

  it("a forward: the forwarded text is the quoted (untrusted) message, its files are media, not a reply", () => {
    const forward = (snapshot: Record<string, unknown>, content = "") =>
      normalizeMessage(
        message({
          guild_id: undefined,
          channel_type: 1,
          content,
          message_reference: { type: 1, message_id: "555", channel_id: "556" },
          message_snapshots: [{ message: { type: 0, timestamp: "2026-01-01T00:00:00.000Z", ...snapshot } }],
        }),
        BOT,
        base,
      );
    const text = fieldsOf(forward({ content: "forwarded text", attachments: [] }));
    expect(text.body).toBe("[forwarded a message]");
    expect(text.replyTo).toEqual({ messageId: "555", body: "forwarded text" });
    const withFile = fieldsOf(
      forward(
        {
          content: "",
          attachments: [
            { id: "9", filename: "f.png", size: 3, url: "https://cdn/f.png", content_type: "image/png" },
          ],
        },
        "what is this?",
      ),
    );
    expect(withFile.body).toBe("what is this?");
    expect(withFile.media).toEqual([
      { kind: "image", mime: "image/png", size: 3, ref: "https://cdn/f.png", name: "f.png" },
    ]);
    expect(forward({ content: "  ", attachments: [] })).toEqual({
      skip: "a forward of a message without text or files",
    });
  });

  it("a sticker, a poll or an embed with no text is skipped as such (nothing to read), not taken as empty", () => {
    const skipOf = (extra: Record<string, unknown>) =>
      normalizeMessage(message({ content: "", ...extra }), BOT, base);
    expect(skipOf({ sticker_items: [{ id: "1", name: "wave", format_type: 1 }] })).toEqual({
      skip: "a sticker without text",
    });
    expect(skipOf({ poll: { question: { text: "lunch?" }, answers: [] } })).toEqual({ skip: "a poll" });
    expect(skipOf({ embeds: [{ title: "link preview" }] })).toEqual({ skip: "an embed without text" });
    // With text, the text is answered.
    expect(
      fieldsOf(normalizeMessage(message({ sticker_items: [{ id: "1", name: "wave" }] }), BOT, base)).body,
    ).toBe("hello");
  });

  it("attachments become media with url, content type and size", () => {
    const f = fieldsOf(
      normalizeMessage(
        message({
          attachments: [
            { id: "1", filename: "a.png", size: 1234, url: "https://cdn/a.png", content_type: "image/png" },
            {
              id: "2",
              filename: "b.ogg",
              size: 99,
              url: "https://cdn/b.ogg",
              content_type: "audio/ogg; codecs=opus",
            },
            { id: "3", filename: "c.bin", size: 5, url: "https://cdn/c.bin" },
          ],
        }),
        BOT,
        base,
      ),
    );
    expect(f.media).toEqual([
      { kind: "image", mime: "image/png", size: 1234, ref: "https://cdn/a.png", name: "a.png" },
      { kind: "audio", mime: "audio/ogg", size: 99, ref: "https://cdn/b.ogg", name: "b.ogg" },
      {
        kind: "document",
        mime: "application/octet-stream",
        size: 5,
        ref: "https://cdn/c.bin",
        name: "c.bin",
      },
    ]);
  });

  it("skips bots (itself included), webhooks and system messages", () => {
    const skip = (extra: Record<string, unknown>) => normalizeMessage(message(extra), BOT, base);
    expect(skip({ author: { id: "900", username: "hubbot", bot: true } })).toEqual({
      skip: "the bot's own message",
    });
    expect(skip({ author: { id: "1", username: "other", bot: true } })).toEqual({
      skip: "message from a bot",
    });
    expect(skip({ webhook_id: "77" })).toEqual({ skip: "message from a webhook" });
    expect(skip({ type: 7 })).toEqual({ skip: "system message (type 7)" });
    expect(skip({ author: { ...USER, system: true } })).toEqual({ skip: "system message (type 0)" });
  });

  it("guilds: allowlists of guilds and channels, per-guild allowFrom, and channels that need no mention", () => {
    const guilds = {
      [GUILD]: {
        requireMention: true,
        allowFrom: [],
        channels: { [CHANNEL]: { enabled: true, requireMention: false } },
      },
      "501": { requireMention: true, allowFrom: ["1"] },
    };
    const opts = { ...base, guilds };
    expect(fieldsOf(normalizeMessage(message(), BOT, opts)).wasMentioned).toBe(true);
    expect(normalizeMessage(message({ channel_id: "610" }), BOT, opts)).toEqual({
      skip: `channel 610 is not in guild ${GUILD}'s channels`,
    });
    expect(normalizeMessage(message({ guild_id: "502" }), BOT, opts)).toEqual({
      skip: "guild 502 is not in channels.discord.guilds",
    });
    expect(normalizeMessage(message({ guild_id: "501" }), BOT, opts)).toEqual({
      skip: "sender 700 is not in this guild's or channel's allowFrom",
    });
    // A thread follows its parent channel's rule.
    const inThread = normalizeMessage(message({ channel_id: THREAD, channel_type: 11 }), BOT, {
      ...opts,
      parentId: CHANNEL,
    });
    expect(fieldsOf(inThread).wasMentioned).toBe(true);
    const star = { ...base, guilds: { "*": { requireMention: true, allowFrom: [] } } };
    expect(fieldsOf(normalizeMessage(message({ guild_id: "999" }), BOT, star)).wasMentioned).toBe(false);
  });
});
