import { intParam, isRecord } from "./protocol.js";

/** A message the fake knows, and whether the bot sent it (only those can be edited). */
export interface StoredMessage {
  message: Record<string, unknown>;
  byBot: boolean;
  /** The params of the bot's send, then of its latest edit (what it asked Telegram to show). */
  params?: Record<string, unknown>;
  /** How many edits changed it. */
  edits?: number;
  /** Deleted (deleteMessage): no longer shown. */
  deleted?: boolean;
  /** The bot's reaction emojis on it (setMessageReaction). */
  reactions?: string[];
}

/** The key of a message within its chat. */
export const msgKey = (chatId: unknown, messageId: unknown) => `${String(chatId)}:${String(messageId)}`;

const chatIdOf = (message: Record<string, unknown>) => (isRecord(message.chat) ? message.chat.id : undefined);

/** The update_id of a stored update (0 when it has none). */
export const updateId = (u: Record<string, unknown>) => intParam(u.update_id) ?? 0;

/**
 * What the fake Bot API knows: the chats and messages it has seen (so replies
 * and edits behave like on Telegram), the files it serves, and update numbering.
 */
export class TelegramStore {
  readonly chats = new Map<string, Record<string, unknown>>();
  readonly messages = new Map<string, StoredMessage>();
  readonly lastMessageId = new Map<string, number>();
  readonly files = new Map<string, Buffer>();
  /** The forum topics seen, as `<chat id>:<thread id>` (a message of a topic, or one's creation). */
  readonly topics = new Set<string>();
  nextUpdateId = 1000;

  /** Remembers a message (and its chat) so replies/edits to it behave like on Telegram. */
  rememberMessage(message: Record<string, unknown>, byBot: boolean): void {
    const chat = message.chat;
    if (!isRecord(chat)) return;
    const chatKey = String(chat.id);
    this.chats.set(chatKey, chat);
    const id = intParam(message.message_id);
    if (id === undefined) return;
    const key = msgKey(chatKey, id);
    const thread = intParam(message.message_thread_id);
    if (thread !== undefined && message.is_topic_message === true) this.topics.add(msgKey(chatKey, thread));
    // Test builders number messages on their own: an injected message never replaces one the bot sent.
    if (!byBot && this.messages.get(key)?.byBot) return;
    this.messages.set(key, { message, byBot });
    this.lastMessageId.set(chatKey, Math.max(this.lastMessageId.get(chatKey) ?? 0, id));
  }

  rememberUpdate(update: Record<string, unknown>): void {
    for (const key of [
      "message",
      "edited_message",
      "channel_post",
      "edited_channel_post",
      "business_message",
    ]) {
      const m = update[key];
      if (isRecord(m)) this.rememberMessage(m, false);
    }
    const cq = update.callback_query;
    if (
      isRecord(cq) &&
      isRecord(cq.message) &&
      !this.messages.has(msgKey(chatIdOf(cq.message), cq.message.message_id))
    )
      this.rememberMessage(cq.message, true);
  }

  /** Gives the update an update_id if it has none; keeps the counter above explicit ids. */
  withUpdateId(update: object): Record<string, unknown> {
    const copy: Record<string, unknown> = { ...(update as Record<string, unknown>) };
    const given = intParam(copy.update_id);
    if (given === undefined) copy.update_id = this.nextUpdateId++;
    else this.nextUpdateId = Math.max(this.nextUpdateId, given + 1);
    this.rememberUpdate(copy);
    return copy;
  }

  /** The chat object for an id: the one seen in updates, else inferred from the id like Telegram's ranges. */
  chatFor(chatId: number | string): Record<string, unknown> {
    const known = this.chats.get(String(chatId));
    if (known) return known;
    if (typeof chatId === "string")
      return { id: -1001000000001, type: "channel", title: chatId, username: chatId.slice(1) };
    if (chatId > 0) return { id: chatId, type: "private", first_name: "User" };
    if (chatId <= -1000000000000) return { id: chatId, type: "supergroup", title: "Group" };
    return { id: chatId, type: "group", title: "Group" };
  }

  /** The bot's messages in a chat as Telegram shows them now: edits applied, deleted ones gone, in order. */
  shown(chatId: number | string): StoredMessage[] {
    return [...this.messages.entries()]
      .filter(([key, m]) => key.startsWith(`${String(chatId)}:`) && m.byBot && !m.deleted)
      .map(([, m]) => m)
      .sort((a, b) => Number(a.message.message_id) - Number(b.message.message_id));
  }

  fileBytes(fileId: string): Buffer {
    return this.files.get(fileId) ?? Buffer.from(`fake file ${fileId}`, "utf8");
  }
}
