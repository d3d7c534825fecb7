import { describe, expect, it } from "vitest";
import {
  normalizeSlackEvent,
  type SlackMessageEvent,
  SlackMessageEventSchema,
  type SlackNormalizeOptions,
  slackTextToPlain,
} from "../src/normalize.js";

const BOT = { userId: "UBOT0001", botId: "BBOT0001" };
const OPTIONS: SlackNormalizeOptions = { accountId: "default", editedMessages: "ignore" };

const event = (fields: Record<string, unknown>): SlackMessageEvent =>
  SlackMessageEventSchema.parse({
    type: "message",
    channel: "C0GROUP001",
    channel_type: "channel",
    user: "U0USER0001",
    text: "hi",
    ts: "1700000000.000100",
    ...fields,
  });

const fieldsOf = (raw: SlackMessageEvent, options = OPTIONS) => {
  const result = normalizeSlackEvent(raw, BOT, options);
  if ("skip" in result) throw new Error(`skipped: ${result.skip}`);
  return result.fields;
};

describe("slackTextToPlain", () => {
  it("turns Slack's markup into plain text and drops the bot's leading mention", () => {
    expect(
      slackTextToPlain("<@UBOT0001> ask <@U2|ann> in <#C1|general> &lt;now&gt; &amp; <!here>", "UBOT0001"),
    ).toBe("ask @ann in #general <now> & @here");
    expect(slackTextToPlain("see <https://e.com|the docs> or <mailto:a@b.c|a@b.c> <https://x.y>")).toBe(
      "see the docs (https://e.com) or a@b.c (mailto:a@b.c) https://x.y",
    );
  });

  it("keeps the bot's mention when it is the whole message (a bare ping is not an empty message)", () => {
    expect(slackTextToPlain("<@UBOT0001>", "UBOT0001")).toBe("@UBOT0001");
    expect(slackTextToPlain(" <@UBOT0001|hub> ", "UBOT0001")).toBe("@hub");
  });
});

describe("normalizeSlackEvent", () => {
  it("maps a DM: direct chat, always addressed, no thread", () => {
    const f = fieldsOf(event({ channel: "D0DIRECT01", channel_type: "im" }));
    expect(f).toMatchObject({
      channel: "slack",
      messageId: "1700000000.000100",
      chat: { type: "direct", id: "D0DIRECT01" },
      wasMentioned: true,
      timestamp: 1_700_000_000_000,
    });
    expect(f.threadId).toBeUndefined();
    // A message in the app's Home tab is in the same DM.
    const home = fieldsOf(event({ channel: "D0DIRECT01", channel_type: "app_home" }));
    expect(home).toMatchObject({ chat: { type: "direct", id: "D0DIRECT01" }, wasMentioned: true });
  });

  it("a channel_type Slack may add later is no reason to drop the event: the channel id says DM or not", () => {
    expect(fieldsOf(event({ channel: "D0DIRECT01", channel_type: "galaxy" })).chat.type).toBe("direct");
    expect(fieldsOf(event({ channel: "C0GROUP001", channel_type: "galaxy" })).chat.type).toBe("group");
  });

  it("gives app_mention and message for one mention the same message id, both addressed", () => {
    const text = "<@UBOT0001> status?";
    const a = fieldsOf(event({ type: "app_mention", text, channel_type: undefined }));
    const m = fieldsOf(event({ text }));
    expect([a.messageId, a.wasMentioned, a.body, a.chat.type]).toEqual([
      m.messageId,
      true,
      "status?",
      "group",
    ]);
    expect(m.wasMentioned).toBe(true);
  });

  it("keeps an unmentioned channel message as not addressed, with its ts to reply to", () => {
    expect(fieldsOf(event({}))).toMatchObject({ wasMentioned: false, replyToMessageId: "1700000000.000100" });
  });

  it("marks a top-level channel message as answered in a thread of its own; a thread reply and a DM are not", () => {
    expect(fieldsOf(event({})).ownThread).toBe(true);
    expect(fieldsOf(event({ thread_ts: "1699999999.000001" })).ownThread).toBeUndefined();
    expect(fieldsOf(event({ channel: "D0DIRECT01", channel_type: "im" })).ownThread).toBeUndefined();
  });

  it("maps thread_ts to threadId; a thread on the bot's message is addressed to it", () => {
    const inThread = fieldsOf(event({ thread_ts: "1699999999.000001", parent_user_id: "UBOT0001" }));
    expect(inThread).toMatchObject({
      threadId: "1699999999.000001",
      wasMentioned: true,
      replyTo: { messageId: "1699999999.000001", senderId: "UBOT0001" },
    });
    // The root of a thread carries thread_ts == ts: it is not in a thread.
    expect(fieldsOf(event({ thread_ts: "1700000000.000100" })).threadId).toBeUndefined();
  });

  it("handles a thread reply also sent to the channel (thread_broadcast) as a message in its thread", () => {
    // Slack's example payload (events/message/thread_broadcast): the thread's author is in `root`.
    const broadcast = event({
      subtype: "thread_broadcast",
      text: "broadcasting this reply",
      ts: "1673464745.620769",
      thread_ts: "1673464730.703009",
      root: { type: "message", user: "UBOT0001", text: "the answer", ts: "1673464730.703009" },
      client_msg_id: "123abc456",
    });
    expect(fieldsOf(broadcast)).toMatchObject({
      messageId: "1673464745.620769",
      threadId: "1673464730.703009",
      body: "broadcasting this reply",
      wasMentioned: true,
      replyTo: { messageId: "1673464730.703009", senderId: "UBOT0001" },
      replyToMessageId: "1673464745.620769",
    });
    // Its app_mention (same ts): the same message id, so one run.
    const mention = event({ type: "app_mention", text: "<@UBOT0001> also", ts: "1673464745.620769" });
    expect(fieldsOf(mention).messageId).toBe(fieldsOf(broadcast).messageId);
    // A broadcast in a thread on someone else's message, without a mention, is not addressed to the bot.
    const other = event({ subtype: "thread_broadcast", thread_ts: "1.000001", root: { user: "U0OTHER001" } });
    expect(fieldsOf(other).wasMentioned).toBe(false);
    expect(
      "skip" in normalizeSlackEvent(event({ subtype: "thread_broadcast", user: "UBOT0001" }), BOT, OPTIONS),
    ).toBe(true);
  });

  it("reads the text of a message whose text is only in rich_text blocks, mentions included", () => {
    const blocks = [
      {
        type: "rich_text",
        block_id: "BVp",
        elements: [
          {
            type: "rich_text_section",
            elements: [
              { type: "user", user_id: "UBOT0001" },
              { type: "text", text: " what is " },
              { type: "text", text: "2 < 3", style: { code: true } },
              { type: "text", text: "? see " },
              { type: "link", url: "https://e.com", text: "docs" },
              { type: "text", text: " " },
              { type: "emoji", name: "wave", unicode: "1f44b" },
            ],
          },
        ],
      },
    ];
    const f = fieldsOf(event({ text: "", blocks }));
    expect([f.body, f.wasMentioned]).toEqual(["what is 2 < 3? see docs (https://e.com) 👋", true]);
    // With text, the text is what counts (Slack sends both, saying the same).
    expect(fieldsOf(event({ text: "hi there", blocks })).body).toBe("hi there");
    // Blocks that are not rich_text, or not blocks at all, give no text (and never drop the event).
    expect(
      fieldsOf(event({ text: "", blocks: [{ type: "section", text: { type: "mrkdwn", text: "x" } }] })).body,
    ).toBe("");
    expect(fieldsOf(event({ text: "", blocks: "nonsense" })).body).toBe("");
  });

  it("skips bots, the bot itself, subtypes and edits (unless edits are new messages)", () => {
    const skip = (fields: Record<string, unknown>, options = OPTIONS) =>
      "skip" in normalizeSlackEvent(event(fields), BOT, options);
    expect(skip({ bot_id: "B0OTHER001" })).toBe(true);
    expect(skip({ subtype: "bot_message", user: undefined })).toBe(true);
    expect(skip({ user: "UBOT0001" })).toBe(true);
    expect(skip({ subtype: "channel_join" })).toBe(true);
    expect(skip({ subtype: "message_deleted" })).toBe(true);
    const edit = {
      subtype: "message_changed",
      ts: "1700000050.000001",
      message: {
        type: "message",
        user: "U0USER0001",
        text: "fixed",
        ts: "1700000000.000100",
        edited: { ts: "1700000050.000000" },
      },
    };
    expect(skip(edit)).toBe(true);
    const asNew = fieldsOf(event(edit), { ...OPTIONS, editedMessages: "as-new" });
    expect([asNew.body, asNew.messageId]).toEqual(["fixed", "1700000000.000100:edit:1700000050.000000"]);
  });

  it("as-new answers an edit, never a change its author did not make (an unfurl, a thread's replies)", () => {
    const asNew = { ...OPTIONS, editedMessages: "as-new" as const };
    const skipWhy = (fields: Record<string, unknown>) => {
      const r = normalizeSlackEvent(event(fields), BOT, asNew);
      return "skip" in r ? r.skip : undefined;
    };
    const original = {
      type: "message",
      user: "U0USER0001",
      text: "look at <https://example.com>",
      ts: "1700000000.000100",
    };
    // Slack's unfurl: the same text, an attachment added, no `edited`.
    const unfurl = {
      subtype: "message_changed",
      hidden: true,
      ts: "1700000051.000001",
      message: { ...original, attachments: [{ from_url: "https://example.com" }] },
      previous_message: original,
    };
    expect(skipWhy(unfurl)).toMatch(/no edit/);
    // A thread parent's reply count moved on.
    const replies = {
      ...unfurl,
      message: { ...original, reply_count: 1, latest_reply: "1700000052.000100" },
    };
    expect(skipWhy(replies)).toMatch(/no edit/);
    // Marked edited, yet the same words (an attachment removed, say): nothing new to answer.
    const edited = { ...original, edited: { user: "U0USER0001", ts: "1700000053.000000" } };
    expect(skipWhy({ ...unfurl, message: edited })).toMatch(/changed neither/);
    expect(skipWhy({ ...unfurl, message: { ...edited, text: "look at this instead" } })).toBeUndefined();
  });

  it("turns a file share's files into media references (their private download URL, else the id)", () => {
    const f = fieldsOf(
      event({
        subtype: "file_share",
        files: [
          {
            id: "F1",
            name: "cat.jpg",
            mimetype: "image/jpeg",
            size: 10,
            url_private: "https://files.slack.com/files-pri/T1-F1/cat.jpg",
            url_private_download: "https://files.slack.com/files-pri/T1-F1/download/cat.jpg",
          },
          { id: "F2", mimetype: "application/pdf" },
          { id: "F3" },
        ],
      }),
    );
    expect(f.media).toEqual([
      {
        kind: "image",
        mime: "image/jpeg",
        ref: "https://files.slack.com/files-pri/T1-F1/download/cat.jpg",
        size: 10,
        name: "cat.jpg",
      },
      { kind: "document", mime: "application/pdf", ref: "F2" },
      { kind: "document", mime: "application/octet-stream", ref: "F3" },
    ]);
  });

  it("refuses events that are not Slack messages at the schema", () => {
    for (const bad of [
      { ts: "yesterday" },
      { channel: 42 },
      { type: "reaction_added" },
      { thread_ts: "x" },
    ]) {
      expect(SlackMessageEventSchema.safeParse({ ...event({}), ...bad }).success).toBe(false);
    }
  });
});
