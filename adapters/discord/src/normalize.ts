import { type AdapterFields, cleanMediaName, type Media } from "@hub/core";
import { z } from "zod";
import { type DiscordGuild, guildAccess } from "./config.js";

/** A Discord id: a snowflake, sent as a string of digits (a 64-bit number). */
const Snowflake = z.string().regex(/^\d{1,20}$/);

const UserSchema = z.looseObject({
  id: Snowflake,
  username: z.string(),
  global_name: z.string().nullish(),
  bot: z.boolean().optional(),
  system: z.boolean().optional(),
});

const AttachmentSchema = z.looseObject({
  id: z.string(),
  filename: z.string(),
  size: z.number().int().nonnegative(),
  url: z.string(),
  content_type: z.string().optional(),
});

const BaseMessageSchema = z.looseObject({
  id: Snowflake,
  channel_id: Snowflake,
  author: UserSchema,
  content: z.string(),
  timestamp: z.string(),
  type: z.number().int(),
  webhook_id: z.string().optional(),
});

/** Why a thread message is skipped when its parent channel cannot be read (no chat to place it in). */
export const UNKNOWN_THREAD_PARENT = "thread message whose parent channel is unknown";
/** The parts of a MESSAGE_CREATE dispatch the adapter reads, validated at the edge. */
export const DiscordMessageSchema = BaseMessageSchema.extend({
  guild_id: Snowflake.optional(),
  channel_type: z.number().int().optional(),
  member: z.looseObject({ nick: z.string().nullish() }).optional(),
  mentions: z.array(z.looseObject({ id: z.string() })).default([]),
  mention_roles: z.array(z.string()).default([]),
  attachments: z.array(AttachmentSchema).default([]),
  /** `type` 1 is a forward (its content is in `message_snapshots`), 0 or absent a reply. */
  message_reference: z
    .looseObject({ message_id: z.string().optional(), type: z.number().int().optional() })
    .optional(),
  referenced_message: BaseMessageSchema.nullish(),
  /** A forward's copy of the message forwarded (Discord sends one). */
  message_snapshots: z
    .array(
      z.looseObject({
        message: z.looseObject({
          content: z.string().default(""),
          attachments: z.array(AttachmentSchema).default([]),
        }),
      }),
    )
    .optional(),
  sticker_items: z.array(z.looseObject({ name: z.string() })).optional(),
  poll: z.looseObject({}).optional(),
  embeds: z.array(z.looseObject({})).optional(),
});
/** A validated MESSAGE_CREATE. */
export type DiscordMessage = z.infer<typeof DiscordMessageSchema>;

/** Discord channel types the adapter tells apart (discord-api-types `ChannelType`). */
export const THREAD_CHANNEL_TYPES: ReadonlySet<number> = new Set([10, 11, 12]);
const DM_CHANNEL_TYPES: ReadonlySet<number> = new Set([1, 3]);
/** Message types that are people talking (DEFAULT, REPLY); every other type is a system message. */
const USER_MESSAGE_TYPES: ReadonlySet<number> = new Set([0, 19]);

/** Who the bot is: its user id and the roles it holds in the message's guild. */
export interface DiscordBotIdentity {
  id: string;
  username: string;
  roleIds: ReadonlySet<string>;
}

/** What normalizing needs besides the message. */
export interface DiscordNormalizeOptions {
  accountId: string;
  guilds: Record<string, DiscordGuild>;
  /** The parent channel of the message's channel when it is a thread. */
  parentId?: string | undefined;
  /** "Guild #channel", when known. */
  title?: string | undefined;
}

/** The adapter fields of a message, or why it is not ours to answer. */
export type DiscordNormalizeResult = { fields: AdapterFields } | { skip: string };

/** Discord's `message_reference.type` of a forward. */
const FORWARD = 1;

/** The message forwarded, when this one is a forward. */
function forwardedOf(msg: DiscordMessage) {
  return msg.message_reference?.type === FORWARD ? msg.message_snapshots?.[0]?.message : undefined;
}

function mediaOf(attachments: DiscordMessage["attachments"]): Media[] {
  return attachments.map((a) => {
    const mime = a.content_type?.split(";")[0]?.trim() || "application/octet-stream";
    const kind: Media["kind"] = mime.startsWith("image/")
      ? "image"
      : mime.startsWith("audio/")
        ? "audio"
        : mime.startsWith("video/")
          ? "video"
          : "document";
    const name = cleanMediaName(a.filename);
    return { kind, mime, size: a.size, ref: a.url, ...(name ? { name } : {}) };
  });
}

/**
 * The text the agent reads: a leading mention of the bot dropped, other mentions of it made readable.
 * A message that is nothing but mentions of the bot keeps them (read as `@bot`): the ping is what was said.
 */
export function bodyOf(content: string, bot: DiscordBotIdentity): string {
  const me = new RegExp(`<@!?${bot.id}>`, "g");
  const roles = [...bot.roleIds].map((r) => `<@&${r}>`);
  let text = content.trimStart();
  for (;;) {
    const lead = /^<@!?(\d+)>|^<@&(\d+)>/.exec(text);
    if (!lead || !(lead[1] === bot.id || (lead[2] && bot.roleIds.has(lead[2])))) break;
    text = text.slice(lead[0].length).trimStart();
  }
  if (text === "") text = content.trim();
  for (const role of roles) text = text.split(role).join(`@${bot.username}`);
  return text.replace(me, `@${bot.username}`);
}

/**
 * The reply-to context: the referenced message (author, text), or only its id when Discord left it out.
 * A forward's message is someone else's words too, so its text goes the same way (marked untrusted).
 */
function replyToOf(msg: DiscordMessage): Pick<AdapterFields, "replyTo"> {
  const forwarded = forwardedOf(msg);
  if (forwarded) {
    const id = msg.message_reference?.message_id ?? msg.id;
    return { replyTo: { messageId: id, ...(forwarded.content ? { body: forwarded.content } : {}) } };
  }
  const reply = msg.referenced_message;
  if (reply) {
    const body = reply.content ? { body: reply.content } : {};
    return { replyTo: { messageId: reply.id, senderId: reply.author.id, ...body } };
  }
  const id = msg.message_reference?.message_id;
  return id ? { replyTo: { messageId: id } } : {};
}

/** What a message with nothing the agent can read is (a sticker, a poll, an embed), or undefined. */
function contentlessKind(msg: DiscordMessage, forwarded: ReturnType<typeof forwardedOf>): string | undefined {
  if (msg.content.trim() !== "" || msg.attachments.length > 0) return undefined;
  if (forwarded) {
    const readable = forwarded.content.trim() !== "" || forwarded.attachments.length > 0;
    return readable ? undefined : "a forward of a message without text or files";
  }
  if (msg.sticker_items?.length) return "a sticker without text";
  if (msg.poll) return "a poll";
  if (msg.embeds?.length) return "an embed without text";
  return undefined;
}

/** Whether the message addresses the bot: its user, one of its roles, or a reply to its message. */
export function mentionsBot(msg: DiscordMessage, bot: DiscordBotIdentity): boolean {
  if (msg.mentions.some((u) => u.id === bot.id)) return true;
  if (msg.mention_roles.some((r) => bot.roleIds.has(r))) return true;
  return msg.referenced_message?.author.id === bot.id;
}

/**
 * Turns a MESSAGE_CREATE into adapter fields. A guild channel is a group (chat =
 * channel id); a thread keeps its parent as the chat and itself as `threadId`; a
 * DM is direct. Bots (the hub itself included), webhooks and system messages are
 * skipped, and so is what `guilds` does not allow. Pure.
 */
export function normalizeMessage(
  msg: DiscordMessage,
  bot: DiscordBotIdentity,
  options: DiscordNormalizeOptions,
): DiscordNormalizeResult {
  if (msg.author.id === bot.id) return { skip: "the bot's own message" };
  if (msg.author.bot) return { skip: "message from a bot" };
  if (msg.webhook_id) return { skip: "message from a webhook" };
  if (msg.author.system || !USER_MESSAGE_TYPES.has(msg.type))
    return { skip: `system message (type ${msg.type})` };
  const direct = msg.guild_id === undefined || DM_CHANNEL_TYPES.has(msg.channel_type ?? -1);
  // Without `channel_type` (older payloads) a channel the cache knows as a thread is one.
  const isThread =
    !direct &&
    (THREAD_CHANNEL_TYPES.has(msg.channel_type ?? -1) ||
      (msg.channel_type === undefined && options.parentId !== undefined));
  if (isThread && !options.parentId) return { skip: UNKNOWN_THREAD_PARENT };
  const chatId = isThread ? (options.parentId as string) : msg.channel_id;
  let mentioned = direct || mentionsBot(msg, bot);
  if (!direct) {
    const rule = guildAccess(options.guilds, msg.guild_id as string, chatId, msg.author.id);
    if (rule && "blocked" in rule) return { skip: rule.blocked };
    // A channel configured to answer without a mention: every message there addresses the bot.
    if (rule && !rule.requireMention) mentioned = true;
  }
  const forwarded = forwardedOf(msg);
  const nothing = contentlessKind(msg, forwarded);
  if (nothing) return { skip: nothing };
  const fields: AdapterFields = {
    channel: "discord",
    accountId: options.accountId,
    messageId: msg.id,
    chat: {
      type: direct ? "direct" : "group",
      id: chatId,
      ...(options.title ? { title: options.title } : {}),
    },
    ...(isThread ? { threadId: msg.channel_id } : {}),
    sender: {
      id: msg.author.id,
      name: msg.member?.nick ?? msg.author.global_name ?? msg.author.username,
      username: msg.author.username,
      isBot: false,
    },
    body: bodyOf(msg.content, bot) || (forwarded ? "[forwarded a message]" : ""),
    wasMentioned: mentioned,
    ...replyToOf(msg),
    media: mediaOf([...msg.attachments, ...(forwarded?.attachments ?? [])]),
    timestamp: Date.parse(msg.timestamp) || Date.now(),
    ...(direct ? {} : { replyToMessageId: msg.id }),
  };
  return { fields };
}
