import { type AdapterFields, cleanMediaName, type Media } from "@hub/core";
import { z } from "zod";
import { richTextToMrkdwn } from "./rich-text.js";

const FileSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string().optional(),
  mimetype: z.string().optional(),
  size: z.number().int().nonnegative().optional(),
  url_private: z.string().optional(),
  url_private_download: z.string().optional(),
});

/** The fields of a Slack `message`/`app_mention` event the adapter reads, validated at the edge. */
export const SlackMessageEventSchema = z.looseObject({
  type: z.enum(["message", "app_mention"]),
  subtype: z.string().optional(),
  channel: z.string().min(1),
  // channel, group, im, mpim, app_home; a type Slack adds later is read from the channel id (see chatType).
  channel_type: z.string().optional(),
  user: z.string().min(1).optional(),
  bot_id: z.string().optional(),
  text: z.string().default(""),
  ts: z.string().regex(/^\d+\.\d+$/),
  thread_ts: z
    .string()
    .regex(/^\d+\.\d+$/)
    .optional(),
  parent_user_id: z.string().optional(),
  files: z.array(FileSchema).optional(),
  /** The composer's rich_text (read when `text` is empty); any other shape counts as none. */
  blocks: z.array(z.unknown()).optional().catch(undefined),
  /** `thread_broadcast`: the thread's root message (its author is whom the reply answers). */
  root: z
    .looseObject({ user: z.string().min(1).optional() })
    .optional()
    .catch(undefined),
  /** `message_changed`: the message as it is now. */
  message: z.record(z.string(), z.unknown()).optional(),
  /** `message_changed`: the message as it was. */
  previous_message: z.record(z.string(), z.unknown()).optional(),
});
/** A validated Slack message event. */
export type SlackMessageEvent = z.infer<typeof SlackMessageEventSchema>;

/** Who the bot is in this workspace (from `auth.test`): its user id is what mentions name. */
export interface SlackBotIdentity {
  userId: string;
  botId?: string | undefined;
  /** The workspace the bot token belongs to (`auth.test`'s `team_id`). */
  teamId?: string | undefined;
  /** Its Enterprise Grid organization, if any. */
  enterpriseId?: string | undefined;
}

/** How events are normalized. */
export interface SlackNormalizeOptions {
  accountId: string;
  editedMessages: "ignore" | "as-new";
  /** Whether the bot has answered in this thread: a message there is addressed to it. */
  isBotThread?: (channel: string, threadTs: string) => boolean;
}

/** The adapter fields of an event, or why it is not ours to answer. */
export type SlackNormalizeResult = { fields: AdapterFields } | { skip: string };

/** Names the hub has looked up (users.info / conversations.info), when it has them. */
export interface SlackNames {
  sender?: string | undefined;
  username?: string | undefined;
  chatTitle?: string | undefined;
}

const MEDIA_KIND: Array<[RegExp, Media["kind"]]> = [
  [/^image\//, "image"],
  [/^audio\//, "audio"],
  [/^video\//, "video"],
];

function media(files: SlackMessageEvent["files"]): Media[] {
  return (files ?? []).map((f) => {
    const mime = f.mimetype || "application/octet-stream";
    const name = cleanMediaName(f.name);
    return {
      kind: MEDIA_KIND.find(([re]) => re.test(mime))?.[1] ?? "document",
      mime,
      // The private download URL (fetched with the bot token); the file id when Slack gave none.
      ref: f.url_private_download || f.url_private || f.id,
      ...(f.size !== undefined ? { size: f.size } : {}),
      ...(name ? { name } : {}),
    };
  });
}

/**
 * Slack's mrkdwn as the user typed it -> plain text for the model: `<@U1>` -> `@U1`,
 * `<#C1|general>` -> `#general`, `<!here>` -> `@here`, `<url|label>` -> `label (url)`,
 * and `&amp;`/`&lt;`/`&gt;` decoded. The bot's own leading mention is dropped, unless it is all
 * the message says (then the ping is the message).
 */
export function slackTextToPlain(text: string, botUserId?: string): string {
  const mention = botUserId ? new RegExp(`^\\s*<@${botUserId}(?:\\|[^>]*)?>[\\s,:]*`) : undefined;
  const stripped = mention ? text.replace(mention, "") : text;
  const body = stripped.trim() === "" ? text : stripped;
  return body
    .replace(/<([^<>]*)>/g, (_, inner: string) => {
      const [target = "", label] = inner.split("|", 2);
      if (target.startsWith("@")) return label ? `@${label}` : target;
      if (target.startsWith("#")) return `#${label ?? target.slice(1)}`;
      if (target.startsWith("!")) return `@${(label ?? target.slice(1)).replace(/^subteam\^/, "")}`;
      return label && label !== target ? `${label} (${target})` : target.replace(/^mailto:/, "");
    })
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
    .trim();
}

function mentions(text: string, userId: string): boolean {
  return new RegExp(`<@${userId}(?:\\|[^>]*)?>`).test(text);
}

/**
 * Subtypes that are a user's message: a file share (its files become media) and a thread reply also sent
 * to the channel (`thread_broadcast`, a message in its thread). Every other subtype is not for the hub.
 */
const USER_SUBTYPES = new Set(["file_share", "thread_broadcast"]);

const tsMillis = (ts: string): number => Math.floor(Number(ts) * 1000);

/**
 * Slack's DM channels start with `D`; `im`/`mpim` say so when the event carries a channel type. A message
 * in the app's Home tab (`app_home`, sent to workspace apps) is in the bot's DM with the user.
 */
function chatType(event: SlackMessageEvent): "direct" | "group" {
  const type = event.channel_type;
  if (type === "im" || type === "app_home") return "direct";
  if (type === "channel" || type === "group" || type === "mpim") return "group";
  return event.channel.startsWith("D") ? "direct" : "group";
}

/** Unwraps `message_changed` into the edited message (with its own identity), or says why not. */
function edited(
  event: SlackMessageEvent,
  options: SlackNormalizeOptions,
): { event: SlackMessageEvent; messageId: string } | { skip: string } {
  if (options.editedMessages === "ignore") return { skip: "edited message (editedMessages: ignore)" };
  const inner = SlackMessageEventSchema.safeParse({
    type: "message",
    channel: event.channel,
    ...(event.channel_type ? { channel_type: event.channel_type } : {}),
    ...event.message,
  });
  if (!inner.success) return { skip: "edited message without a readable message" };
  // Slack changes messages their author never edited (a link unfurled, a thread's reply count): only an
  // edit (`edited`) that changed what the agent reads is a new message.
  const editTs = z.looseObject({ edited: z.looseObject({ ts: z.string() }) }).safeParse(event.message);
  if (!editTs.success) return { skip: "a message change that is no edit (an unfurl, a thread's replies)" };
  if (sameWords(event.previous_message, event.message))
    return { skip: "an edit that changed neither the text nor the files" };
  return {
    event: { ...inner.data, subtype: undefined },
    messageId: `${inner.data.ts}:edit:${editTs.data.edited.ts}`,
  };
}

// Whether a message's text and files are as they were (Slack's `previous_message`; unknown: not the same).
function sameWords(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
): boolean {
  if (!before || !after) return false;
  const filesOf = (m: Record<string, unknown>) =>
    JSON.stringify(Array.isArray(m.files) ? m.files.map((f) => (f as { id?: unknown }).id) : []);
  return before.text === after.text && filesOf(before) === filesOf(after);
}

/**
 * Turns a Slack `message` or `app_mention` event into adapter fields. `app_mention` and the
 * `message` Slack sends for the same mention share channel + `ts`, so they share a messageId
 * (and one dedupe key): one run. `thread_ts` becomes `threadId`; a top-level channel message
 * is replied to in a thread on it (`replyToMessageId`). Pure.
 */
export function normalizeSlackEvent(
  raw: SlackMessageEvent,
  bot: SlackBotIdentity,
  options: SlackNormalizeOptions,
  names: SlackNames = {},
): SlackNormalizeResult {
  let event = raw;
  let messageId = raw.ts;
  if (raw.subtype === "message_changed") {
    const unwrapped = edited(raw, options);
    if ("skip" in unwrapped) return unwrapped;
    ({ event, messageId } = unwrapped);
  } else if (raw.subtype !== undefined && !USER_SUBTYPES.has(raw.subtype)) {
    return { skip: `message subtype ${raw.subtype}` };
  }
  if (event.bot_id || event.subtype === "bot_message") return { skip: "message from a bot" };
  if (!event.user) return { skip: "message without a user" };
  if (event.user === bot.userId) return { skip: "the bot's own message" };
  const type = chatType(event);
  const threadId = event.thread_ts && event.thread_ts !== event.ts ? event.thread_ts : undefined;
  // A broadcast reply names its thread's author in `root`, a plain reply in `parent_user_id`.
  const parentUser = event.parent_user_id ?? event.root?.user;
  // The composer's blocks carry the message when `text` is empty.
  const text = event.text !== "" ? event.text : richTextToMrkdwn(event.blocks);
  const mentioned =
    type === "direct" ||
    raw.type === "app_mention" ||
    mentions(text, bot.userId) ||
    (threadId !== undefined &&
      (parentUser === bot.userId || options.isBotThread?.(event.channel, threadId) === true));
  const fields: AdapterFields = {
    channel: "slack",
    accountId: options.accountId,
    messageId,
    chat: { type, id: event.channel, ...(names.chatTitle ? { title: names.chatTitle } : {}) },
    ...(threadId ? { threadId } : {}),
    sender: {
      id: event.user,
      ...(names.sender ? { name: names.sender } : {}),
      ...(names.username ? { username: names.username } : {}),
      isBot: false,
    },
    body: slackTextToPlain(text, bot.userId),
    wasMentioned: mentioned,
    // A top-level channel message is answered in a thread of its own.
    ...(type !== "direct" && threadId === undefined ? { ownThread: true } : {}),
    ...(threadId && parentUser ? { replyTo: { messageId: threadId, senderId: parentUser } } : {}),
    media: media(event.files),
    timestamp: tsMillis(event.ts),
    // The message we answer: a thread is started on it (channels), the working reaction goes on it.
    replyToMessageId: event.ts,
  };
  return { fields };
}
