import type { MessageEntity, User, UserFromGetMe } from "grammy/types";
import { parseTelegramHtml, trimFormatted } from "./html.js";
import {
  type Answer,
  badRequest,
  boolParam,
  CHAT_ACTIONS,
  errorAnswer,
  intParam,
  isRecord,
  MAX_MESSAGE_LENGTH,
  objParam,
  okAnswer,
  type Params,
  strParam,
} from "./protocol.js";
import { msgKey, type TelegramStore } from "./store.js";
import { type TelegramFailure, telegramErrors } from "./types.js";

/** Some of the emojis Telegram accepts as reactions (ReactionTypeEmoji); others answer REACTION_INVALID. */
const REACTION_EMOJI = new Set(["👍", "👎", "❤", "🔥", "👀", "🤔", "👌", "🙏", "✍", "😢", "🎉", "⚡", "🤝"]);

const unixNow = () => Math.floor(Date.now() / 1000);
const isFailure = (v: unknown): v is TelegramFailure => isRecord(v) && typeof v.error_code === "number";

/** Longest caption of a photo or document, in characters. */
const MAX_CAPTION_LENGTH = 1024;

/** The uploaded file a `photo`/`document` parameter names: `attach://<part>` or the part itself. */
function uploadedFile(params: Params, field: string): { filename: string; data: Buffer } | undefined {
  const value = params[field];
  const named = typeof value === "string" && value.startsWith("attach://") ? params[value.slice(9)] : value;
  if (!isRecord(named) || !Buffer.isBuffer(named.data)) return undefined;
  return { filename: String(named.filename ?? field), data: named.data };
}

/** chat_id as Telegram reads it: an integer, or "@channelusername". */
function chatIdParam(v: unknown): number | string | undefined {
  const n = intParam(v);
  if (n !== undefined) return n;
  return typeof v === "string" && v.startsWith("@") && v.length > 1 ? v : undefined;
}
/** Parses text according to parse_mode; returns the visible text + entities or a 400. */
function formatText(
  params: Params,
  tooLong: string,
): { text: string; entities: MessageEntity[] } | TelegramFailure {
  const raw = strParam(params.text) ?? "";
  const mode = strParam(params.parse_mode)?.toLowerCase() ?? "";
  let parsed: { text: string; entities: MessageEntity[] };
  if (mode === "html") {
    const result = parseTelegramHtml(raw);
    if (!result.ok) return badRequest(`can't parse entities: ${result.description}`);
    parsed = { text: result.text, entities: result.entities };
  } else if (mode === "" || mode === "markdown" || mode === "markdownv2") {
    // Markdown modes are not parsed by the fake: the text is kept as sent.
    const given = Array.isArray(params.entities) ? (params.entities as MessageEntity[]) : [];
    parsed = trimFormatted(raw, given);
  } else {
    return badRequest("unsupported parse_mode");
  }

  if (parsed.text === "") return badRequest("message text is empty");
  // Telegram counts characters (code points) of the visible text.
  if ([...parsed.text].length > MAX_MESSAGE_LENGTH) return badRequest(tooLong);
  return parsed;
}
/** The fake's message methods: getMe, sendMessage, editMessageText, deleteMessage, setMessageReaction, sendChatAction, getFile. */
export class MessageMethods {
  constructor(
    private readonly store: TelegramStore,
    private readonly botUser: User & { username: string },
  ) {}

  sendMessage(params: Params): Answer {
    const formatted = formatText(params, "message is too long");
    if (isFailure(formatted)) return errorAnswer(formatted);
    const composed = this.#compose(params);
    if ("error" in composed) return composed.error;
    const { message } = composed;
    message.text = formatted.text;
    if (formatted.entities.length > 0) message.entities = formatted.entities;
    const preview = objParam(params.link_preview_options);
    if (preview) message.link_preview_options = preview;
    this.store.rememberMessage(message, true);
    const stored = this.store.messages.get(
      msgKey(String((message.chat as { id: number }).id), message.message_id as number),
    );
    if (stored) stored.params = params;
    return okAnswer(message);
  }

  /** sendPhoto / sendDocument: the file arrives as a multipart part named by `attach://<id>` (or a file_id). */
  sendFile(params: Params, field: "photo" | "document"): Answer {
    const file = uploadedFile(params, field);
    if (!file) return errorAnswer(badRequest(`there is no ${field} in the request`));
    const caption = strParam(params.caption) ?? "";
    let captionText: { text: string; entities: MessageEntity[] } | undefined;
    if (caption !== "") {
      const formatted = formatText({ ...params, text: caption }, "message caption is too long");
      if (isFailure(formatted)) return errorAnswer(formatted);
      if ([...formatted.text].length > MAX_CAPTION_LENGTH)
        return errorAnswer(badRequest("message caption is too long"));
      captionText = formatted;
    }
    const composed = this.#compose(params);
    if ("error" in composed) return composed.error;
    const { message } = composed;
    const fileId = `f${this.store.files.size + 1}-${field}`;
    this.store.files.set(fileId, file.data);
    const base = { file_id: fileId, file_unique_id: `u${fileId}`, file_size: file.data.length };
    if (field === "photo") message.photo = [{ ...base, width: 320, height: 240 }];
    else message.document = { ...base, file_name: file.filename, mime_type: "application/octet-stream" };
    if (captionText) {
      message.caption = captionText.text;
      if (captionText.entities.length > 0) message.caption_entities = captionText.entities;
    }
    this.store.rememberMessage(message, true);
    return okAnswer(message);
  }

  /** A new bot message in the requested chat (thread and reply applied), or the error Telegram gives. */
  #compose(params: Params): { message: Record<string, unknown> } | { error: Answer } {
    const chatId = chatIdParam(params.chat_id);
    if (chatId === undefined) return { error: errorAnswer(badRequest("chat_id is empty")) };
    const chat = this.store.chatFor(chatId);
    const chatKey = String(chat.id);
    const messageId = (this.store.lastMessageId.get(chatKey) ?? 0) + 1;
    const message: Record<string, unknown> = {
      message_id: messageId,
      from: this.botUser,
      chat,
      date: unixNow(),
    };
    const threadId = intParam(params.message_thread_id);
    // As Telegram: in a forum, only a topic's id is a thread to send to (a General reply chain's is not).
    if (threadId !== undefined && chat.is_forum === true && !this.store.topics.has(msgKey(chatKey, threadId)))
      return { error: errorAnswer(badRequest("message thread not found")) };
    if (threadId !== undefined) {
      message.message_thread_id = threadId;
      if (chat.is_forum === true) message.is_topic_message = true;
    }
    const replyParams = objParam(params.reply_parameters);
    const replyToId = intParam(replyParams?.message_id) ?? intParam(params.reply_to_message_id);
    if (replyToId !== undefined) {
      const replied = this.store.messages.get(msgKey(chatKey, replyToId));
      if (replied) {
        const { reply_to_message: _nested, ...rest } = replied.message;
        message.reply_to_message = rest;
      } else if (!boolParam(replyParams?.allow_sending_without_reply)) {
        return { error: errorAnswer(badRequest("message to be replied not found")) };
      }
    }
    return { message };
  }

  editMessageText(params: Params): Answer {
    const formatted = formatText(params, "MESSAGE_TOO_LONG");
    if (isFailure(formatted)) {
      const empty = formatted.description === "Bad Request: message text is empty";
      return errorAnswer(empty ? badRequest("text must be non-empty") : formatted);
    }
    if (strParam(params.inline_message_id) !== undefined) return okAnswer(true);
    const chatId = chatIdParam(params.chat_id);
    if (chatId === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const stored = this.store.messages.get(
      msgKey(this.store.chatFor(chatId).id, intParam(params.message_id)),
    );
    if (!stored || stored.deleted) return errorAnswer(badRequest("message to edit not found"));
    if (!stored.byBot) return errorAnswer(badRequest("message can't be edited"));
    const before = stored.message;
    const entities = formatted.entities.length > 0 ? formatted.entities : undefined;
    if (before.text === formatted.text && JSON.stringify(before.entities) === JSON.stringify(entities)) {
      return errorAnswer(telegramErrors.messageNotModified());
    }
    const edited: Record<string, unknown> = { ...before, text: formatted.text, edit_date: unixNow() };
    if (entities) edited.entities = entities;
    else delete edited.entities;
    stored.message = edited;
    stored.params = { ...stored.params, text: params.text, parse_mode: params.parse_mode };
    stored.edits = (stored.edits ?? 0) + 1;
    return okAnswer(edited);
  }

  deleteMessage(params: Params): Answer {
    const chatId = chatIdParam(params.chat_id);
    if (chatId === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const stored = this.store.messages.get(
      msgKey(this.store.chatFor(chatId).id, intParam(params.message_id)),
    );
    if (!stored || stored.deleted) return errorAnswer(badRequest("message to delete not found"));
    if (!stored.byBot && this.store.chatFor(chatId).type !== "private")
      return errorAnswer(badRequest("message can't be deleted"));
    stored.deleted = true;
    return okAnswer(true);
  }

  setMessageReaction(params: Params): Answer {
    const chatId = chatIdParam(params.chat_id);
    if (chatId === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const stored = this.store.messages.get(
      msgKey(this.store.chatFor(chatId).id, intParam(params.message_id)),
    );
    if (!stored || stored.deleted) return errorAnswer(badRequest("message to react not found"));
    const given = Array.isArray(params.reaction) ? params.reaction : [];
    const emojis: string[] = [];
    for (const r of given) {
      if (!isRecord(r) || r.type !== "emoji" || typeof r.emoji !== "string" || !REACTION_EMOJI.has(r.emoji))
        return errorAnswer(badRequest("REACTION_INVALID"));
      emojis.push(r.emoji);
    }
    // Bots may set one reaction at a time.
    if (emojis.length > 1) return errorAnswer(badRequest("REACTIONS_TOO_MANY"));
    stored.reactions = emojis;
    return okAnswer(true);
  }

  sendChatAction(params: Params): Answer {
    if (chatIdParam(params.chat_id) === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const action = strParam(params.action) ?? "";
    if (!CHAT_ACTIONS.has(action)) return errorAnswer(badRequest("wrong parameter action in request"));
    return okAnswer(true);
  }

  getFile(params: Params): Answer {
    const fileId = strParam(params.file_id) ?? "";
    if (fileId === "") return errorAnswer(badRequest("file_id not specified"));
    return okAnswer({
      file_id: fileId,
      file_unique_id: `u${Buffer.from(fileId).toString("base64url").slice(0, 14)}`,
      file_size: this.store.fileBytes(fileId).length,
      file_path: `files/${fileId}`,
    });
  }

  getMe(): Answer {
    const me: UserFromGetMe = {
      ...this.botUser,
      is_bot: true,
      username: this.botUser.username,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
      can_connect_to_business: false,
      has_main_web_app: false,
      has_topics_enabled: false,
      allows_users_to_create_topics: false,
      can_manage_bots: false,
      supports_join_request_queries: false,
    };
    return okAnswer(me);
  }
}
