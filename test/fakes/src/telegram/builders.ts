import type { Chat, Message, MessageEntity, User } from "grammy/types";

// ---------------------------------------------------------------------------------------------
// Update builders

let builderMessageId = 1;
const unixNow = () => Math.floor(Date.now() / 1000);

/** An update (as `pushUpdate`/`postWebhook` take it) carrying a text message; update_id is optional. */
export interface TextMessageUpdate {
  update_id?: number;
  message: Message.TextMessage;
}

/**
 * Finds `@username` mentions and `/command` / `/command@bot` spans like Telegram's server does and
 * returns them as `mention` / `bot_command` entities (offset/length in UTF-16 code units).
 */
export function mentionEntities(text: string): MessageEntity[] {
  const entities: MessageEntity[] = [];
  // A command starts at the beginning or after a non-word character (not "/", "<", ">").
  for (const m of text.matchAll(
    /(?<![A-Za-z0-9_/<>])\/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\w@/])/g,
  )) {
    entities.push({ type: "bot_command", offset: m.index, length: m[0].length });
  }
  // A mention is "@" not preceded by a word character (so e-mails and /cmd@bot are not mentions).
  for (const m of text.matchAll(/(?<![A-Za-z0-9_@/])@[A-Za-z0-9_]{2,32}(?![\w@])/g)) {
    entities.push({ type: "mention", offset: m.index, length: m[0].length });
  }
  return entities.sort((a, b) => a.offset - b.offset);
}

/** Unwraps an update `{ message }` passed as `replyTo` and drops its own reply (Telegram nests one level). */
function replyOf(replyTo: object): Message.TextMessage["reply_to_message"] {
  const inner: object =
    "message" in replyTo && typeof replyTo.message === "object" && replyTo.message !== null
      ? replyTo.message
      : replyTo;
  const { reply_to_message: _dropped, ...rest } = inner as Record<string, unknown>;
  return rest as unknown as Message.TextMessage["reply_to_message"];
}

/** Options of `privateText`. */
export interface PrivateTextOptions {
  chatId: number;
  fromId: number;
  text: string;
  messageId?: number;
  firstName?: string;
  username?: string;
  /** Defaults to `mentionEntities(text)` (Telegram always sends them); pass [] for none. */
  entities?: unknown[];
  /** The message (or `{ message }` update) this one replies to. */
  replyTo?: object;
}

/** A realistic update with a text message from a user in a private chat with the bot. */
export function privateText(opts: PrivateTextOptions): TextMessageUpdate {
  const firstName = opts.firstName ?? "Alice";
  const from: User = { id: opts.fromId, is_bot: false, first_name: firstName, language_code: "en" };
  if (opts.username !== undefined) from.username = opts.username;
  const chat: Chat.PrivateChat = { id: opts.chatId, type: "private", first_name: firstName };
  if (opts.username !== undefined) chat.username = opts.username;
  const message: Message.TextMessage = {
    message_id: opts.messageId ?? builderMessageId++,
    from,
    chat,
    date: unixNow(),
    text: opts.text,
  };
  const entities = (opts.entities as MessageEntity[] | undefined) ?? mentionEntities(opts.text);
  if (entities.length > 0) message.entities = entities;
  if (opts.replyTo) message.reply_to_message = replyOf(opts.replyTo);
  return { message };
}

/** Options of `groupText`. */
export interface GroupTextOptions {
  /** A supergroup id, normally negative like -1001234567890. */
  chatId: number;
  fromId: number;
  text: string;
  title?: string;
  /** Forum topic id (with `isForum`) or reply-thread id (without). */
  threadId?: number;
  isForum?: boolean;
  entities?: unknown[];
  replyTo?: object;
  messageId?: number;
  firstName?: string;
  username?: string;
}

/**
 * A realistic update with a text message in a supergroup. In a forum topic (`isForum` + `threadId`)
 * it carries `message_thread_id`, `is_topic_message: true` and — exactly like Telegram — a
 * `reply_to_message` pointing at the topic's `forum_topic_created` service message when it is not
 * an explicit reply (adapters must not mistake that for a reply to the bot).
 */
export function groupText(opts: GroupTextOptions): TextMessageUpdate {
  const from: User = {
    id: opts.fromId,
    is_bot: false,
    first_name: opts.firstName ?? "Bob",
    language_code: "en",
  };
  if (opts.username !== undefined) from.username = opts.username;
  const chat: Chat.SupergroupChat = {
    id: opts.chatId,
    type: "supergroup",
    title: opts.title ?? "Test Group",
  };
  if (opts.isForum) chat.is_forum = true;
  const message: Message.TextMessage = {
    message_id: opts.messageId ?? builderMessageId++,
    from,
    chat,
    date: unixNow(),
    text: opts.text,
  };
  const entities = (opts.entities as MessageEntity[] | undefined) ?? mentionEntities(opts.text);
  if (entities.length > 0) message.entities = entities;
  if (opts.threadId !== undefined) {
    message.message_thread_id = opts.threadId;
    if (opts.isForum) message.is_topic_message = true;
  }
  if (opts.replyTo) {
    message.reply_to_message = replyOf(opts.replyTo);
    // A reply in a forum's General topic carries its reply chain's first message id as thread id, with no
    // `is_topic_message` (tdlib/telegram-bot-api#447); that id is no topic a message can be sent to.
    if (opts.isForum && opts.threadId === undefined) {
      const replied = message.reply_to_message as { message_id: number; message_thread_id?: number };
      message.message_thread_id = replied.message_thread_id ?? replied.message_id;
    }
  } else if (opts.isForum && opts.threadId !== undefined) {
    const topicCreated = {
      message_id: opts.threadId,
      from,
      chat,
      date: unixNow() - 3600,
      message_thread_id: opts.threadId,
      is_topic_message: true,
      forum_topic_created: { name: `Topic ${opts.threadId}`, icon_color: 7322096 },
    };
    message.reply_to_message = topicCreated as unknown as Message.TextMessage["reply_to_message"];
  }
  return { message };
}
