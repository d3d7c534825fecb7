import { type AdapterFields, cleanMediaName, HUB_COMMANDS, type Media } from "@hub/core";
import { z } from "zod";

// The Bot API's Integer (ids, dates, offsets, sizes): a 1.5 can only be a forged update.
const Integer = z.number().int();

const UserSchema = z.looseObject({
  id: Integer,
  is_bot: z.boolean(),
  first_name: z.string(),
  last_name: z.string().optional(),
  username: z.string().optional(),
});
const EntitySchema = z.looseObject({
  type: z.string(),
  offset: Integer,
  length: Integer,
  user: UserSchema.optional(),
});
const FileSchema = z.looseObject({
  file_id: z.string(),
  file_size: Integer.optional(),
  mime_type: z.string().optional(),
  file_name: z.string().optional(),
});
const StickerSchema = FileSchema.extend({
  is_animated: z.boolean().optional(),
  is_video: z.boolean().optional(),
});

// Who wrote a message first (a forward's `forward_origin`, an external reply's `origin`).
const OriginSchema = z.looseObject({
  type: z.string(),
  sender_user: z.looseObject({ id: Integer }).optional(),
  sender_chat: z.looseObject({ id: Integer }).optional(),
  chat: z.looseObject({ id: Integer }).optional(),
});

const BaseMessageSchema = z.looseObject({
  message_id: Integer,
  message_thread_id: Integer.optional(),
  is_topic_message: z.boolean().optional(),
  from: UserSchema.optional(),
  sender_chat: z.looseObject({ id: Integer, title: z.string().optional() }).optional(),
  is_automatic_forward: z.boolean().optional(),
  /** Set on a forwarded message (Bot API 7.0+): who wrote it first. Its text is theirs, not the sender's. */
  forward_origin: OriginSchema.optional(),
  date: Integer,
  edit_date: Integer.optional(),
  chat: z.looseObject({
    id: Integer,
    type: z.enum(["private", "group", "supergroup", "channel"]),
    title: z.string().optional(),
    is_forum: z.boolean().optional(),
  }),
  text: z.string().optional(),
  caption: z.string().optional(),
  /** Shared by the messages of one album (photos or videos sent together), each an update of its own. */
  media_group_id: z.string().optional(),
  entities: z.array(EntitySchema).optional(),
  caption_entities: z.array(EntitySchema).optional(),
  photo: z.array(FileSchema).optional(),
  document: FileSchema.optional(),
  voice: FileSchema.optional(),
  audio: FileSchema.optional(),
  video: FileSchema.optional(),
  sticker: StickerSchema.optional(),
  forum_topic_created: z.unknown().optional(),
});

// Between the message id and the edit date in the hub's id of an edited message taken as new.
const EDIT_MARK = ":edit:";

/** Telegram's message_id of a message the hub knows by `messageId` (an edit's id carries its date too). */
export function platformMessageId(messageId: string): number {
  return Number(messageId.split(EDIT_MARK)[0]);
}
/** The parts of a Telegram Message the adapter reads, validated at the edge. */
export const TelegramMessageSchema = BaseMessageSchema.extend({
  reply_to_message: BaseMessageSchema.optional(),
  /** The part of the replied message the user quoted (Bot API 7.0+). */
  quote: z.looseObject({ text: z.string() }).optional(),
  /** A reply to a message of another chat or topic (Bot API 7.0+): no `reply_to_message` then. */
  external_reply: z.looseObject({ origin: OriginSchema, message_id: Integer.optional() }).optional(),
});
/** A validated Telegram message. */
export type TelegramMessage = z.infer<typeof TelegramMessageSchema>;

/** The update kinds the adapter asks Telegram for. */
export const ALLOWED_UPDATES = ["message", "edited_message", "channel_post", "edited_channel_post"] as const;

/** A kind of update the adapter reads a message from. */
export type MessageUpdateKind = (typeof ALLOWED_UPDATES)[number];

// An edit, of a chat's message or of a channel's post.
const isEdit = (kind: MessageUpdateKind) => kind === "edited_message" || kind === "edited_channel_post";

/** Who the bot is (from getMe): needed to tell which mentions and replies are ours. */
export interface BotIdentity {
  id: number;
  username: string;
  /** Privacy mode off (getMe's `can_read_all_group_messages`): the bot gets every group message. */
  readsAllGroupMessages?: boolean;
}

/** How messages are normalized. */
export interface NormalizeOptions {
  accountId: string;
  /** Answer posts in channels the bot administers. */
  channelPosts: boolean;
  /** `ignore` (default) or treat an edit as a new message. */
  editedMessages: "ignore" | "as-new";
}

/** The adapter fields of a message, or why it is not ours to answer. */
export type NormalizeResult = { fields: AdapterFields } | { skip: string };

const slice = (text: string, e: { offset: number; length: number }) =>
  text.slice(e.offset, e.offset + e.length);

function media(msg: TelegramMessage): Media[] {
  const out: Media[] = [];
  const push = (kind: Media["kind"], file: z.infer<typeof FileSchema>, mime: string) => {
    const name = cleanMediaName(file.file_name);
    out.push({
      kind,
      mime: file.mime_type || mime,
      ref: file.file_id,
      ...(file.file_size !== undefined ? { size: file.file_size } : {}),
      ...(name ? { name } : {}),
    });
  };
  // Telegram sends each photo in several sizes; the last one is the largest.
  const photo = msg.photo?.at(-1);
  if (photo) push("image", photo, "image/jpeg");
  if (msg.document) push("document", msg.document, "application/octet-stream");
  if (msg.voice) push("voice", msg.voice, "audio/ogg");
  if (msg.audio) push("audio", msg.audio, "audio/mpeg");
  if (msg.video) push("video", msg.video, "video/mp4");
  if (msg.sticker) {
    const mime = msg.sticker.is_video
      ? "video/webm"
      : msg.sticker.is_animated
        ? "application/x-tgsticker"
        : "image/webp";
    push("sticker", msg.sticker, mime);
  }
  return out;
}

/** Whether a message's entities address the bot (`@bot`, a text mention, `/cmd@bot`, a leading `/cmd`), or a command names another bot. */
interface Addressing {
  mentioned: boolean;
  otherBotCommand?: string;
}

function addressing(
  text: string,
  entities: NonNullable<TelegramMessage["entities"]>,
  bot: BotIdentity,
): Addressing {
  const me = `@${bot.username.toLowerCase()}`;
  let mentioned = false;
  for (const e of entities) {
    if (e.type === "mention" && slice(text, e).toLowerCase() === me) mentioned = true;
    if (e.type === "text_mention" && e.user?.id === bot.id) mentioned = true;
    if (e.type === "bot_command") {
      const command = slice(text, e);
      const at = command.indexOf("@");
      // A bare command leading the message (`/stop`) is for the bots that get it: Telegram sends one to a bot
      // in privacy mode only as meant for it (the group's bot, or the last one that spoke), and the menu
      // sends commands bare in a group with one bot. A bot that reads every message gets other bots' commands
      // too: there only the hub's own commands are taken as its.
      if (at < 0) {
        if (e.offset === 0 && (!bot.readsAllGroupMessages || isHubCommand(command))) mentioned = true;
        continue;
      }
      if (`@${command.slice(at + 1).toLowerCase()}` !== me) return { mentioned, otherBotCommand: command };
      mentioned = true;
    }
  }
  return { mentioned };
}

/**
 * The text without the bot's own leading mention (`@bot`, or a text mention of it) and what follows it
 * (`,`, `:`, spaces), as Discord and Slack drop theirs: the model reads what was said to it. A message
 * that is nothing but the mention keeps it (the ping is the message).
 */
function withoutLeadingMention(
  text: string,
  entities: NonNullable<TelegramMessage["entities"]>,
  bot: BotIdentity,
): string {
  const start = text.length - text.trimStart().length;
  const first = entities.find((e) => e.offset === start);
  if (!first) return text;
  const ours =
    (first.type === "mention" && slice(text, first).toLowerCase() === `@${bot.username.toLowerCase()}`) ||
    (first.type === "text_mention" && first.user?.id === bot.id);
  if (!ours) return text;
  const rest = text.slice(first.offset + first.length).replace(/^[\s,:]+/, "");
  return rest.trim() === "" ? text : rest;
}

// Why a message of this kind is not answered under the account's settings, if it is not.
function unwantedKind(
  msg: TelegramMessage,
  kind: MessageUpdateKind,
  options: NormalizeOptions,
): string | undefined {
  if (isEdit(kind) && options.editedMessages === "ignore") return "edited message (editedMessages: ignore)";
  if (msg.chat.type === "channel" && !options.channelPosts) return "channel post (channelPosts is off)";
  // The channel's own post arrives as a channel_post (answered there when channelPosts is on): its
  // mirror in the discussion group is not a second message.
  if (msg.is_automatic_forward) return "a channel post mirrored into its discussion group";
  return undefined;
}

/** What a forwarded message says itself: the forwarded words reach the agent quoted, as someone else's. */
const FORWARD_NOTE = "[forwarded a message]";

/**
 * The words quoted with a message, as someone else's (marked untrusted): a forward's own text (its
 * author is whoever `forward_origin` names), or the message it replies to.
 */
function quotedOf(
  msg: TelegramMessage,
  reply: TelegramMessage["reply_to_message"],
): Pick<AdapterFields, "replyTo"> {
  const origin = msg.forward_origin;
  if (origin) {
    const author = authorOf(origin);
    const text = msg.text ?? msg.caption;
    return {
      replyTo: {
        messageId: String(msg.message_id),
        ...(author ? { senderId: String(author.id) } : {}),
        ...(text ? { body: text } : {}),
      },
    };
  }
  // The part the user quoted is what they answer, rather than the whole message.
  const quoted = msg.quote?.text;
  const external = msg.external_reply;
  if (!reply && external) {
    const author = authorOf(external.origin);
    return {
      replyTo: {
        messageId: String(external.message_id ?? msg.message_id),
        ...(author ? { senderId: String(author.id) } : {}),
        ...(quoted ? { body: quoted } : {}),
      },
    };
  }
  if (!reply) return {};
  const body = quoted ?? reply.text ?? reply.caption;
  return {
    replyTo: {
      messageId: String(reply.message_id),
      ...(reply.from ? { senderId: String(reply.from.id) } : {}),
      ...(body ? { body } : {}),
    },
  };
}

const authorOf = (origin: z.infer<typeof OriginSchema>) =>
  origin.sender_user ?? origin.sender_chat ?? origin.chat;

// Who sent it. On behalf of a chat (an anonymous group admin, a channel) `from` is a stand-in user
// (GroupAnonymousBot, marked a bot) and the sender is the chat.
function senderOf(msg: TelegramMessage) {
  if (!msg.sender_chat) return msg.from;
  const name = msg.sender_chat.title ?? msg.chat.title ?? "channel";
  return { id: msg.sender_chat.id, is_bot: false, first_name: name };
}

/**
 * Turns a Telegram message into adapter fields: chat kind, forum topic,
 * mention detection (`@bot`, a text mention of the bot, a reply to the bot,
 * `/cmd@bot`), reply-to and media references. Pure.
 */
export function normalizeMessage(
  msg: TelegramMessage,
  kind: MessageUpdateKind,
  bot: BotIdentity,
  options: NormalizeOptions,
): NormalizeResult {
  const unwanted = unwantedKind(msg, kind, options);
  if (unwanted) return { skip: unwanted };
  const sender = senderOf(msg);
  if (!sender) return { skip: "message without a sender" };
  if (sender.is_bot) return { skip: "message from a bot" };

  const text = msg.text ?? msg.caption ?? "";
  const attached = media(msg);
  // Service messages (a member joined, a pin, a topic created) and content with nothing to read.
  if (text.trim() === "" && attached.length === 0)
    return { skip: "no text, caption or file (a service message, a location, a poll)" };
  const entities = msg.entities ?? msg.caption_entities ?? [];
  // A forward's mentions and commands are its author's words: they neither address the bot nor command it.
  const forwarded = msg.forward_origin !== undefined;
  const addressed = forwarded
    ? { mentioned: false, otherBotCommand: undefined }
    : addressing(text, entities, bot);
  if (addressed.otherBotCommand !== undefined)
    return { skip: `command for another bot (${addressed.otherBotCommand})` };
  // In forum topics every message "replies" to the topic's creation message; that is not a reply to us.
  const reply =
    msg.reply_to_message && msg.reply_to_message.forum_topic_created === undefined
      ? msg.reply_to_message
      : undefined;
  const mentioned = addressed.mentioned || reply?.from?.id === bot.id;

  const chatType = msg.chat.type === "private" ? "direct" : msg.chat.type === "channel" ? "channel" : "group";
  // Only a topic's messages are in a thread: a reply in a forum's General topic carries the id of its reply
  // chain's first message as `message_thread_id` (without `is_topic_message`), which no send accepts
  // ("message thread not found"; tdlib/telegram-bot-api#447).
  const threadId =
    msg.chat.is_forum && msg.is_topic_message === true && msg.message_thread_id !== undefined
      ? String(msg.message_thread_id)
      : undefined;
  const edited = isEdit(kind) && msg.edit_date !== undefined;
  const fields: AdapterFields = {
    channel: "telegram",
    accountId: options.accountId,
    // An edit reuses the message id; as a new message it needs its own dedupe identity.
    messageId: edited ? `${msg.message_id}${EDIT_MARK}${msg.edit_date}` : String(msg.message_id),
    chat: { type: chatType, id: String(msg.chat.id), ...(msg.chat.title ? { title: msg.chat.title } : {}) },
    ...(threadId ? { threadId } : {}),
    sender: {
      id: String(sender.id),
      name: [sender.first_name, sender.last_name].filter(Boolean).join(" "),
      ...(sender.username ? { username: sender.username } : {}),
      isBot: sender.is_bot,
    },
    body: forwarded ? FORWARD_NOTE : withoutLeadingMention(text, entities, bot),
    wasMentioned: chatType === "direct" ? true : mentioned,
    ...quotedOf(msg, reply),
    media: attached,
    timestamp: (msg.edit_date ?? msg.date) * 1000,
    ...(chatType !== "direct" ? { replyToMessageId: String(msg.message_id) } : {}),
  };
  return { fields };
}

const isHubCommand = (command: string) =>
  (HUB_COMMANDS as readonly string[]).includes(command.slice(1).toLowerCase());
