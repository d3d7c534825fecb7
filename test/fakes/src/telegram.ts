import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Chat, Message, MessageEntity, User, UserFromGetMe, WebhookInfo } from "grammy/types";

// A local fake of the Telegram Bot API (https://core.telegram.org/bots/api), faithful where adapters
// tend to get things wrong: getUpdates offset/long-poll/409 semantics, webhook secrets, HTML parse
// errors, the 4096 limit, and error envelopes (429 with parameters.retry_after, 403 blocked, ...).
// Only grammY *types* are imported, so the fake has no runtime dependency on grammY.

/** Options of `startFakeTelegram`. */
export interface FakeTelegramOptions {
  /** Bot token the fake accepts (default "123456:TEST-TOKEN"); any other token gets 401. */
  token?: string;
  /** The bot's user id returned by getMe and used as `from` of sent messages (default 123456). */
  botId?: number;
  /** The bot's username without "@" (default "hub_test_bot"). */
  botUsername?: string;
  /** The bot's first name (default "Hub Test Bot"). */
  botFirstName?: string;
}

/** One Bot API call the fake received (with a valid token), in arrival order. */
export interface TelegramCall {
  /** Canonical method name, e.g. "sendMessage" (Telegram matches method names case-insensitively). */
  method: string;
  /** The parameters as received (JSON body, form fields or query string). */
  params: Record<string, unknown>;
  /** Arrival time (ms since epoch). */
  at: number;
  /** Set once answered: the error code when the call failed (injected or real validation error). */
  error_code?: number;
}

/** An error answer to inject with `failNext`, shaped like the Bot API's error envelope. */
export interface TelegramFailure {
  error_code: number;
  description: string;
  /** Seconds to wait; sent as `parameters.retry_after` (always present for 429, default 1). */
  retry_after?: number;
  /** Sent as `parameters.migrate_to_chat_id` (a group was upgraded to a supergroup). */
  migrate_to_chat_id?: number;
}

/** Ready-made failures with the exact descriptions the real Bot API uses. */
export const telegramErrors = {
  /** 429 flood wait, e.g. "Too Many Requests: retry after 5" with `parameters.retry_after`. */
  tooManyRequests: (retryAfter = 1): TelegramFailure => ({
    error_code: 429,
    description: `Too Many Requests: retry after ${retryAfter}`,
    retry_after: retryAfter,
  }),
  /** 403 when the user blocked the bot (permanent for that chat). */
  blockedByUser: (): TelegramFailure => ({
    error_code: 403,
    description: "Forbidden: bot was blocked by the user",
  }),
  /** 403 when the bot was removed from a group. */
  kickedFromGroup: (): TelegramFailure => ({
    error_code: 403,
    description: "Forbidden: bot was kicked from the supergroup chat",
  }),
  /** 400 for an unknown chat id. */
  chatNotFound: (): TelegramFailure => ({ error_code: 400, description: "Bad Request: chat not found" }),
  /** 400 HTML parse failure, e.g. `Unsupported start tag "foo" at byte offset 0`. */
  cantParseEntities: (detail = 'Unsupported start tag "foo" at byte offset 0'): TelegramFailure => ({
    error_code: 400,
    description: `Bad Request: can't parse entities: ${detail}`,
  }),
  /** 400 when an edit does not change anything. */
  messageNotModified: (): TelegramFailure => ({
    error_code: 400,
    description:
      "Bad Request: message is not modified: specified new message content and reply markup are exactly " +
      "the same as a current content and reply markup of the message",
  }),
  /** 500 from Telegram's side (transient). */
  internalServerError: (): TelegramFailure => ({ error_code: 500, description: "Internal Server Error" }),
} as const;

/** What `setWebhook` registered, under the Bot API's parameter names (undefined while no webhook is set). */
export interface FakeWebhook {
  url: string;
  secret_token?: string;
  max_connections?: number;
  allowed_updates?: string[];
}

/** A running fake Telegram Bot API server. */
export interface FakeTelegram {
  /** Pass as grammY's `client.apiRoot`, e.g. `http://127.0.0.1:PORT` (no trailing slash). */
  readonly apiRoot: string;
  readonly token: string;
  readonly botId: number;
  readonly botUsername: string;
  /** Every call with a valid token, in arrival order (failed ones too; see `error_code`). */
  readonly calls: TelegramCall[];
  /** The params of the *successful* `sendMessage` calls, optionally only those for one chat. */
  sent(chatId?: number | string): Array<Record<string, unknown>>;
  /** All recorded calls of one method (case-insensitive). */
  callsOf(method: string): TelegramCall[];
  /**
   * Resolves with the first recorded call of `method` (past or future) that matches `predicate`,
   * once it has been answered (a getUpdates long poll: once it is parked waiting for updates);
   * rejects after `timeoutMs` (default 5000).
   */
  waitForCall(
    method: string,
    predicate?: (call: TelegramCall) => boolean,
    timeoutMs?: number,
  ): Promise<TelegramCall>;
  /**
   * Queues an update for getUpdates (assigning `update_id`, counting up from 1000, when missing)
   * and wakes a pending long poll. Returns the update_id. Chats/messages in it become known, so
   * replies to them and editMessageText on them work like on Telegram.
   */
  pushUpdate(update: object): number;
  /** Updates queued and not yet confirmed by a getUpdates offset. */
  readonly pendingUpdates: ReadonlyArray<Record<string, unknown>>;
  /** The next `times` calls of `method` answer with `failure` (429 always carries retry_after). */
  failNext(method: string, failure: TelegramFailure, times?: number): void;
  /** The webhook set with setWebhook, if any. */
  readonly webhook: FakeWebhook | undefined;
  /**
   * POSTs `update` as JSON to the current webhook URL, like Telegram does. The
   * `X-Telegram-Bot-Api-Secret-Token` header is `secretToken` when a string is given, the token
   * registered with setWebhook when omitted (what Telegram sends), and absent when `null`.
   * Assigns `update_id` when missing. Throws if no webhook is set.
   */
  postWebhook(update: object, secretToken?: string | null): Promise<{ status: number; body: string }>;
  /** Like `postWebhook` but sends `body` verbatim (e.g. malformed JSON). */
  postWebhookRaw(body: string, secretToken?: string | null): Promise<{ status: number; body: string }>;
  /** Sets the bytes served for a file id (default: `fake file <file_id>`). */
  setFile(fileId: string, data: Uint8Array | string): void;
  /**
   * Implements an extra method (e.g. setMyCommands) so it stops answering 404. The handler's return
   * value becomes `result`; throw a `TelegramApiError` to answer with an error.
   */
  stub(method: string, handler: (params: Record<string, unknown>) => unknown): void;
  /** Answers pending long polls with no updates and stops the server; safe to call twice. */
  close(): Promise<void>;
}

/** Throw from a `stub` handler to answer with a Bot API error. */
export class TelegramApiError extends Error {
  constructor(readonly failure: TelegramFailure) {
    super(failure.description);
    this.name = "TelegramApiError";
  }
}

// ---------------------------------------------------------------------------------------------
// Telegram HTML parse mode

/** The visible text and entities of a message after Telegram parsed its HTML. */
export type TelegramHtmlResult =
  | { ok: true; text: string; entities: MessageEntity[] }
  | { ok: false; description: string };

const ALLOWED_TAGS = new Set([
  "b",
  "strong",
  "i",
  "em",
  "u",
  "ins",
  "s",
  "strike",
  "del",
  "code",
  "pre",
  "a",
  "blockquote",
  "tg-spoiler",
  "span",
  "tg-emoji",
]);

const NAMED_ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

/** Decodes the entity starting at `i` (which is "&"); undefined when it is not a valid one. */
function decodeEntity(s: string, i: number): { char: string; end: number } | undefined {
  const m = /^&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]+));/.exec(s.slice(i, i + 12));
  if (!m) return undefined;
  if (m[3] !== undefined) {
    // Telegram supports only these four named entities.
    const char = NAMED_ENTITIES[m[3]];
    return char === undefined ? undefined : { char, end: i + m[0].length };
  }
  const code = m[1] !== undefined ? Number.parseInt(m[1], 10) : Number.parseInt(m[2] ?? "", 16);
  if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return undefined;
  return { char: String.fromCodePoint(code), end: i + m[0].length };
}

const isSpace = (c: string | undefined): boolean => c === " " || c === "\t" || c === "\n" || c === "\r";

interface OpenTag {
  tag: string;
  arg: string;
  offset: number;
  /** For <pre>: the language taken from a nested <code class="language-x">. */
  language?: string;
  /** True for a <code> directly inside <pre> (merged into the pre entity, like Telegram). */
  mergedIntoPre?: boolean;
}

/**
 * Parses Telegram-flavoured HTML like the Bot API's `parse_mode: "HTML"` (a port of TDLib's parser):
 * returns the visible text and entities, or the error description Telegram would give (without
 * the "Bad Request: can't parse entities: " prefix). Stricter than Telegram in one way: a bare "&"
 * that does not start an entity is rejected (the Bot API docs require escaping it; the server
 * tolerates it), so renderers that forget to escape "&" are caught.
 */
export function parseTelegramHtml(html: string): TelegramHtmlResult {
  const byteOffset = (i: number) => Buffer.byteLength(html.slice(0, i), "utf8");
  const fail = (description: string): TelegramHtmlResult => ({ ok: false, description });
  const n = html.length;
  const stack: OpenTag[] = [];
  const entities: MessageEntity[] = [];
  let text = "";
  let i = 0;
  while (i < n) {
    const c = html[i];
    if (c === "&") {
      const entity = decodeEntity(html, i);
      if (!entity) return fail(`Unescaped "&" at byte offset ${byteOffset(i)}`);
      text += entity.char;
      i = entity.end;
      continue;
    }
    if (c !== "<") {
      text += c;
      i++;
      continue;
    }
    const begin = i;
    i++;
    if (html[i] !== "/") {
      let j = i;
      while (j < n && !isSpace(html[j]) && html[j] !== ">") j++;
      if (j >= n) return fail(`Unclosed start tag at byte offset ${byteOffset(begin)}`);
      const tag = html.slice(i, j).toLowerCase();
      if (!ALLOWED_TAGS.has(tag)) {
        return fail(`Unsupported start tag "${tag}" at byte offset ${byteOffset(begin)}`);
      }
      i = j;
      let arg = "";
      // Attributes: name="value", name='value', name=token, or bare `expandable` on blockquote.
      while (html[i] !== ">") {
        while (i < n && isSpace(html[i])) i++;
        if (html[i] === ">") break;
        const nameStart = i;
        while (i < n && !isSpace(html[i]) && html[i] !== "=" && html[i] !== ">") i++;
        const name = html.slice(nameStart, i).toLowerCase();
        if (name === "") {
          return fail(`Empty attribute name in the tag "${tag}" at byte offset ${byteOffset(begin)}`);
        }
        while (i < n && isSpace(html[i])) i++;
        if (html[i] !== "=") {
          if (tag === "blockquote" && name === "expandable") {
            arg = "expandable";
            continue;
          }
          if (i >= n) return fail(`Unclosed start tag at byte offset ${byteOffset(begin)}`);
          return fail(
            `Expected equal sign in declaration of an attribute of the tag "${tag}" at byte offset ` +
              `${byteOffset(begin)}`,
          );
        }
        i++;
        while (i < n && isSpace(html[i])) i++;
        if (i >= n) return fail(`Unclosed start tag "${tag}" at byte offset ${byteOffset(begin)}`);
        let value = "";
        const quote = html[i];
        if (quote === '"' || quote === "'") {
          i++;
          while (i < n && html[i] !== quote) {
            if (html[i] === "&") {
              const entity = decodeEntity(html, i);
              if (!entity) return fail(`Unescaped "&" at byte offset ${byteOffset(i)}`);
              value += entity.char;
              i = entity.end;
              continue;
            }
            value += html[i];
            i++;
          }
          if (i < n) i++;
        } else {
          const tokenStart = i;
          while (i < n && /[A-Za-z0-9.-]/.test(html[i] ?? "")) i++;
          value = html.slice(tokenStart, i).toLowerCase();
          if (i < n && !isSpace(html[i]) && html[i] !== ">") {
            return fail(`Unexpected end of name token at byte offset ${byteOffset(tokenStart)}`);
          }
        }
        if (i >= n) return fail(`Unclosed start tag at byte offset ${byteOffset(begin)}`);
        if (tag === "a" && name === "href") arg = value;
        else if (tag === "code" && name === "class" && value.startsWith("language-")) arg = value.slice(9);
        else if (tag === "span" && name === "class" && value.startsWith("tg-")) arg = value.slice(3);
        else if (tag === "tg-emoji" && name === "emoji-id") arg = value;
        else if (tag === "blockquote" && name === "expandable") arg = "expandable";
      }
      i++;
      if (tag === "span" && arg !== "spoiler") {
        return fail(`Tag "span" must have class "tg-spoiler" at byte offset ${byteOffset(begin)}`);
      }
      const open: OpenTag = { tag, arg, offset: text.length };
      const parent = stack.at(-1);
      // <pre><code class="language-x"> is one pre entity with a language, as on Telegram.
      if (tag === "code" && parent?.tag === "pre" && parent.offset === text.length) {
        open.mergedIntoPre = true;
        if (arg !== "" && parent.language === undefined) parent.language = arg;
      }
      stack.push(open);
      continue;
    }
    // End tag.
    if (stack.length === 0) return fail(`Unexpected end tag at byte offset ${byteOffset(begin)}`);
    i++;
    let j = i;
    while (j < n && !isSpace(html[j]) && html[j] !== ">") j++;
    const endName = html.slice(i, j).toLowerCase();
    while (j < n && isSpace(html[j])) j++;
    if (html[j] !== ">") return fail(`Unclosed end tag at byte offset ${byteOffset(begin)}`);
    const open = stack.pop()!;
    if (endName !== "" && endName !== open.tag) {
      return fail(
        `Unmatched end tag at byte offset ${byteOffset(begin)}, ` +
          `expected "</${open.tag}>", found "</${endName}>"`,
      );
    }
    i = j + 1;
    const entity = toEntity(open, text.length - open.offset);
    if (entity) entities.push(entity);
  }
  const last = stack.at(-1);
  if (last) return fail(`Can't find end tag corresponding to start tag "${last.tag}"`);
  return { ok: true, ...trimFormatted(text, entities) };
}

function toEntity(open: OpenTag, length: number): MessageEntity | undefined {
  if (length <= 0 || open.mergedIntoPre) return undefined;
  const { offset } = open;
  switch (open.tag) {
    case "b":
    case "strong":
      return { type: "bold", offset, length };
    case "i":
    case "em":
      return { type: "italic", offset, length };
    case "u":
    case "ins":
      return { type: "underline", offset, length };
    case "s":
    case "strike":
    case "del":
      return { type: "strikethrough", offset, length };
    case "tg-spoiler":
    case "span":
      return { type: "spoiler", offset, length };
    case "code":
      return { type: "code", offset, length };
    case "pre":
      return open.language === undefined
        ? { type: "pre", offset, length }
        : { type: "pre", offset, length, language: open.language };
    case "blockquote":
      return { type: open.arg === "expandable" ? "expandable_blockquote" : "blockquote", offset, length };
    case "a":
      // Telegram drops a link without a usable href but keeps its text.
      return open.arg === "" ? undefined : { type: "text_link", offset, length, url: open.arg };
    case "tg-emoji":
      return { type: "custom_emoji", offset, length, custom_emoji_id: open.arg };
    default:
      return undefined;
  }
}

/** Telegram strips surrounding whitespace from message text; entities shift and clip with it. */
function trimFormatted(text: string, entities: MessageEntity[]): { text: string; entities: MessageEntity[] } {
  const start = text.length - text.trimStart().length;
  const trimmed = text.trim();
  const end = start + trimmed.length;
  const out: MessageEntity[] = [];
  for (const e of entities) {
    const from = Math.max(e.offset, start);
    const to = Math.min(e.offset + e.length, end);
    if (to > from) out.push({ ...e, offset: from - start, length: to - from });
  }
  out.sort((a, b) => a.offset - b.offset || b.length - a.length);
  return { text: trimmed, entities: out };
}

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

// ---------------------------------------------------------------------------------------------
// Server

interface Answer {
  status: number;
  body: string;
}

type Params = Record<string, unknown>;

const okAnswer = (result: unknown, description?: string): Answer => ({
  status: 200,
  body: JSON.stringify(description === undefined ? { ok: true, result } : { ok: true, result, description }),
});

function errorAnswer(failure: TelegramFailure): Answer {
  const parameters: Record<string, number> = {};
  if (failure.error_code === 429) {
    // The Bot API always says how long to wait on 429; take it from the description if not given.
    const fromText = /retry after (\d+)/.exec(failure.description)?.[1];
    parameters.retry_after = failure.retry_after ?? (fromText ? Number(fromText) : 1);
  } else if (failure.retry_after !== undefined) parameters.retry_after = failure.retry_after;
  if (failure.migrate_to_chat_id !== undefined) parameters.migrate_to_chat_id = failure.migrate_to_chat_id;
  const body: Record<string, unknown> = {
    ok: false,
    error_code: failure.error_code,
    description: failure.description,
  };
  if (Object.keys(parameters).length > 0) body.parameters = parameters;
  return { status: failure.error_code, body: JSON.stringify(body) };
}

const badRequest = (description: string): TelegramFailure => ({
  error_code: 400,
  description: `Bad Request: ${description}`,
});

const GET_UPDATES_CONFLICT_WEBHOOK =
  "Conflict: can't use getUpdates method while webhook is active; " +
  "use deleteWebhook to delete the webhook first";
const GET_UPDATES_CONFLICT_OTHER =
  "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";

const CHAT_ACTIONS = new Set([
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "upload_document",
  "choose_sticker",
  "find_location",
  "record_video_note",
  "upload_video_note",
]);

const MAX_MESSAGE_LENGTH = 4096;

/** Integer params arrive as numbers (JSON) or strings (form/query); Telegram accepts both. */
function intParam(v: unknown): number | undefined {
  if (typeof v === "number" && Number.isInteger(v)) return v;
  if (typeof v === "string" && /^-?\d+$/.test(v.trim())) return Number(v.trim());
  return undefined;
}

function strParam(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (typeof v === "number") return String(v);
  return undefined;
}

function boolParam(v: unknown): boolean {
  return v === true || v === "true" || v === "1" || v === 1;
}

/** Object params arrive as objects (JSON) or JSON strings (form/query). */
function objParam(v: unknown): Record<string, unknown> | undefined {
  let value = v;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Array params arrive as arrays (JSON) or JSON strings (form/query). */
function arrayParam(v: unknown): unknown[] | undefined {
  let value = v;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return Array.isArray(value) ? value : undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Reads params the way the Bot API does: query string, then JSON, urlencoded or multipart body. */
async function readParams(req: IncomingMessage, url: URL): Promise<Params | undefined> {
  const params: Params = Object.fromEntries(url.searchParams);
  const raw = await readBody(req);
  if (raw.length === 0) return params;
  const type = String(req.headers["content-type"] ?? "").toLowerCase();
  if (type.includes("application/json")) {
    try {
      const parsed: unknown = JSON.parse(raw.toString("utf8"));
      return isRecord(parsed) ? { ...params, ...parsed } : undefined;
    } catch {
      return undefined;
    }
  }
  if (type.includes("application/x-www-form-urlencoded")) {
    return { ...params, ...Object.fromEntries(new URLSearchParams(raw.toString("utf8"))) };
  }
  if (type.includes("multipart/form-data")) {
    // grammY switches to multipart when uploading files; the fake records file fields by name/size.
    const form = await new Request("http://fake/", {
      method: "POST",
      headers: { "content-type": type },
      body: new Uint8Array(raw),
    }).formData();
    form.forEach((value, key) => {
      params[key] = typeof value === "string" ? value : { filename: value.name, size: value.size };
    });
    return params;
  }
  return params;
}

interface StoredMessage {
  message: Record<string, unknown>;
  byBot: boolean;
}

interface PendingPoll {
  limit: number;
  finish(answer: Answer): void;
}

/** Starts a fake Telegram Bot API server on a free local port. */
export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const token = options.token ?? "123456:TEST-TOKEN";
  const botId = options.botId ?? 123456;
  const botUsername = options.botUsername ?? "hub_test_bot";
  const botFirstName = options.botFirstName ?? "Hub Test Bot";
  const botUser: User = { id: botId, is_bot: true, first_name: botFirstName, username: botUsername };

  const calls: TelegramCall[] = [];
  let updates: Array<Record<string, unknown>> = [];
  let nextUpdateId = 1000;
  const failures = new Map<string, TelegramFailure[]>();
  const stubs = new Map<string, (params: Params) => unknown>();
  const files = new Map<string, Buffer>();
  const chats = new Map<string, Record<string, unknown>>();
  const messages = new Map<string, StoredMessage>();
  const lastMessageId = new Map<string, number>();
  const callListeners = new Set<() => void>();
  const settledCalls = new WeakSet<TelegramCall>();
  let webhook: FakeWebhook | undefined;
  let poll: PendingPoll | undefined;
  let closed = false;

  const msgKey = (chatId: unknown, messageId: unknown) => `${String(chatId)}:${String(messageId)}`;

  /** Remembers a message (and its chat) so replies/edits to it behave like on Telegram. */
  function rememberMessage(message: Record<string, unknown>, byBot: boolean): void {
    const chat = message.chat;
    if (!isRecord(chat)) return;
    const chatKey = String(chat.id);
    chats.set(chatKey, chat);
    const id = intParam(message.message_id);
    if (id === undefined) return;
    messages.set(msgKey(chatKey, id), { message, byBot });
    lastMessageId.set(chatKey, Math.max(lastMessageId.get(chatKey) ?? 0, id));
  }

  function rememberUpdate(update: Record<string, unknown>): void {
    for (const key of [
      "message",
      "edited_message",
      "channel_post",
      "edited_channel_post",
      "business_message",
    ]) {
      const m = update[key];
      if (isRecord(m)) rememberMessage(m, false);
    }
    const cq = update.callback_query;
    if (
      isRecord(cq) &&
      isRecord(cq.message) &&
      !messages.has(msgKey(chatIdOf(cq.message), cq.message.message_id))
    )
      rememberMessage(cq.message, true);
  }

  const chatIdOf = (message: Record<string, unknown>) =>
    isRecord(message.chat) ? message.chat.id : undefined;

  /** Gives the update an update_id if it has none; keeps the counter above explicit ids. */
  function withUpdateId(update: object): Record<string, unknown> {
    const copy: Record<string, unknown> = { ...(update as Record<string, unknown>) };
    const given = intParam(copy.update_id);
    if (given === undefined) copy.update_id = nextUpdateId++;
    else nextUpdateId = Math.max(nextUpdateId, given + 1);
    rememberUpdate(copy);
    return copy;
  }

  const updateId = (u: Record<string, unknown>) => intParam(u.update_id) ?? 0;

  /** The chat object for an id: the one seen in updates, else inferred from the id like Telegram's ranges. */
  function chatFor(chatId: number | string): Record<string, unknown> {
    const known = chats.get(String(chatId));
    if (known) return known;
    if (typeof chatId === "string")
      return { id: -1001000000001, type: "channel", title: chatId, username: chatId.slice(1) };
    if (chatId > 0) return { id: chatId, type: "private", first_name: "User" };
    if (chatId <= -1000000000000) return { id: chatId, type: "supergroup", title: "Group" };
    return { id: chatId, type: "group", title: "Group" };
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

  const isFailure = (v: unknown): v is TelegramFailure => isRecord(v) && typeof v.error_code === "number";

  function takeUpdates(limit: number): Array<Record<string, unknown>> {
    return updates.slice(0, limit);
  }

  function getUpdates(params: Params, signal: AbortSignal, parked: () => void): Answer | Promise<Answer> {
    if (webhook) return errorAnswer({ error_code: 409, description: GET_UPDATES_CONFLICT_WEBHOOK });
    const offset = intParam(params.offset) ?? 0;
    const limit = Math.min(100, Math.max(1, intParam(params.limit) ?? 100));
    const timeout = Math.max(0, intParam(params.timeout) ?? 0);
    // Confirming: a positive offset forgets every update below it; a negative one keeps the last -offset.
    if (offset > 0) updates = updates.filter((u) => updateId(u) >= offset);
    else if (offset < 0) updates = updates.slice(offset);
    // Like Telegram, a newer getUpdates kicks out the one still waiting.
    poll?.finish(errorAnswer({ error_code: 409, description: GET_UPDATES_CONFLICT_OTHER }));
    const ready = takeUpdates(limit);
    if (ready.length > 0 || timeout === 0) return okAnswer(ready);
    return new Promise<Answer>((resolve) => {
      const pending: PendingPoll = {
        limit,
        finish: (answer) => {
          clearTimeout(timer);
          if (poll === pending) poll = undefined;
          resolve(answer);
        },
      };
      const timer = setTimeout(() => pending.finish(okAnswer([])), timeout * 1000);
      // The client went away (e.g. grammY's bot.stop() aborts the request): stop waiting.
      signal.addEventListener("abort", () => pending.finish(okAnswer([])), { once: true });
      poll = pending;
      parked();
    });
  }

  function setWebhook(params: Params): Answer {
    const url = strParam(params.url) ?? "";
    if (boolParam(params.drop_pending_updates)) updates = [];
    if (url === "") return deleteWebhookAnswer();
    try {
      new URL(url);
    } catch {
      return errorAnswer(badRequest("bad webhook: invalid URL"));
    }
    const secret = strParam(params.secret_token);
    if (secret !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(secret)) {
      return errorAnswer(badRequest("secret token contains unallowed characters"));
    }
    const next: FakeWebhook = { url };
    if (secret !== undefined) next.secret_token = secret;
    const maxConnections = intParam(params.max_connections);
    if (maxConnections !== undefined) next.max_connections = maxConnections;
    const allowed = arrayParam(params.allowed_updates);
    if (allowed) next.allowed_updates = allowed.map(String);
    webhook = next;
    // A long poll still waiting learns about the webhook the hard way, like on Telegram.
    poll?.finish(errorAnswer({ error_code: 409, description: GET_UPDATES_CONFLICT_WEBHOOK }));
    return okAnswer(true, "Webhook was set");
  }

  function deleteWebhookAnswer(): Answer {
    const had = webhook !== undefined;
    webhook = undefined;
    return okAnswer(true, had ? "Webhook was deleted" : "Webhook is already deleted");
  }

  function getWebhookInfo(): Answer {
    const info: WebhookInfo = {
      url: webhook?.url ?? "",
      has_custom_certificate: false,
      pending_update_count: updates.length,
    };
    if (webhook) {
      info.max_connections = webhook.max_connections ?? 40;
      info.ip_address = "127.0.0.1";
      if (webhook.allowed_updates)
        info.allowed_updates = webhook.allowed_updates as WebhookInfo["allowed_updates"];
    }
    return okAnswer(info);
  }

  function sendMessage(params: Params): Answer {
    const chatId = chatIdParam(params.chat_id);
    if (chatId === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const formatted = formatText(params, "message is too long");
    if (isFailure(formatted)) return errorAnswer(formatted);
    const chat = chatFor(chatId);
    const chatKey = String(chat.id);
    const messageId = (lastMessageId.get(chatKey) ?? 0) + 1;
    const message: Record<string, unknown> = {
      message_id: messageId,
      from: botUser,
      chat,
      date: unixNow(),
    };
    const threadId = intParam(params.message_thread_id);
    if (threadId !== undefined) {
      message.message_thread_id = threadId;
      if (chat.is_forum === true) message.is_topic_message = true;
    }
    const replyParams = objParam(params.reply_parameters);
    const replyToId = intParam(replyParams?.message_id) ?? intParam(params.reply_to_message_id);
    if (replyToId !== undefined) {
      const replied = messages.get(msgKey(chatKey, replyToId));
      if (replied) {
        const { reply_to_message: _nested, ...rest } = replied.message;
        message.reply_to_message = rest;
      } else if (!boolParam(replyParams?.allow_sending_without_reply)) {
        return errorAnswer(badRequest("message to be replied not found"));
      }
    }
    message.text = formatted.text;
    if (formatted.entities.length > 0) message.entities = formatted.entities;
    const preview = objParam(params.link_preview_options);
    if (preview) message.link_preview_options = preview;
    rememberMessage(message, true);
    return okAnswer(message);
  }

  function editMessageText(params: Params): Answer {
    const formatted = formatText(params, "MESSAGE_TOO_LONG");
    if (isFailure(formatted)) {
      const empty = formatted.description === "Bad Request: message text is empty";
      return errorAnswer(empty ? badRequest("text must be non-empty") : formatted);
    }
    if (strParam(params.inline_message_id) !== undefined) return okAnswer(true);
    const chatId = chatIdParam(params.chat_id);
    if (chatId === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const stored = messages.get(msgKey(chatFor(chatId).id, intParam(params.message_id)));
    if (!stored) return errorAnswer(badRequest("message to edit not found"));
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
    return okAnswer(edited);
  }

  function sendChatAction(params: Params): Answer {
    if (chatIdParam(params.chat_id) === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const action = strParam(params.action) ?? "";
    if (!CHAT_ACTIONS.has(action)) return errorAnswer(badRequest("wrong parameter action in request"));
    return okAnswer(true);
  }

  function fileBytes(fileId: string): Buffer {
    return files.get(fileId) ?? Buffer.from(`fake file ${fileId}`, "utf8");
  }

  function getFile(params: Params): Answer {
    const fileId = strParam(params.file_id) ?? "";
    if (fileId === "") return errorAnswer(badRequest("file_id not specified"));
    return okAnswer({
      file_id: fileId,
      file_unique_id: `u${Buffer.from(fileId).toString("base64url").slice(0, 14)}`,
      file_size: fileBytes(fileId).length,
      file_path: `files/${fileId}`,
    });
  }

  function getMe(): Answer {
    const me: UserFromGetMe = {
      ...botUser,
      is_bot: true,
      username: botUsername,
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

  type Handler = (params: Params, signal: AbortSignal, parked: () => void) => Answer | Promise<Answer>;
  const methods: Record<string, Handler> = {
    getMe,
    getUpdates,
    setWebhook,
    deleteWebhook: (params) => {
      if (boolParam(params.drop_pending_updates)) updates = [];
      return deleteWebhookAnswer();
    },
    getWebhookInfo,
    sendMessage,
    sendChatAction,
    editMessageText,
    getFile,
  };
  // Telegram matches method names case-insensitively.
  const canonical = new Map(Object.keys(methods).map((m) => [m.toLowerCase(), m]));

  async function callMethod(
    method: string,
    params: Params,
    signal: AbortSignal,
    parked: () => void,
  ): Promise<Answer> {
    const key = method.toLowerCase();
    const queued = failures.get(key);
    const failure = queued?.shift();
    if (failure) return errorAnswer(failure);
    const stub = stubs.get(key);
    if (stub) {
      try {
        return okAnswer(await stub(params));
      } catch (err) {
        if (err instanceof TelegramApiError) return errorAnswer(err.failure);
        throw err;
      }
    }
    const name = canonical.get(key);
    const handler = name === undefined ? undefined : methods[name];
    if (!handler) return errorAnswer({ error_code: 404, description: "Not Found" });
    return handler(params, signal, parked);
  }

  function send(res: ServerResponse, answer: Answer): void {
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body);
  }

  /** Marks a call as observable by waitForCall: answered, or a getUpdates parked in a long poll. */
  function settle(call: TelegramCall): void {
    settledCalls.add(call);
    for (const listener of [...callListeners]) listener();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (fileMatch) {
      const path = decodeURIComponent(fileMatch[2] ?? "");
      if (fileMatch[1] !== token || !path.startsWith("files/")) {
        return send(res, errorAnswer({ error_code: 404, description: "Not Found" }));
      }
      const data = fileBytes(path.slice("files/".length));
      res
        .writeHead(200, { "content-type": "application/octet-stream", "content-length": data.length })
        .end(data);
      return;
    }
    const match = /^\/bot([^/]+)\/(?:test\/)?([^/]+)$/.exec(url.pathname);
    if (!match) return send(res, errorAnswer({ error_code: 404, description: "Not Found" }));
    if (decodeURIComponent(match[1] ?? "") !== token) {
      await readBody(req);
      return send(res, errorAnswer({ error_code: 401, description: "Unauthorized" }));
    }
    const requested = match[2] ?? "";
    const call: TelegramCall = {
      method: canonical.get(requested.toLowerCase()) ?? requested,
      params: {},
      at: Date.now(),
    };
    calls.push(call);
    const params = await readParams(req, url);
    let answer: Answer;
    if (params === undefined) {
      answer = errorAnswer(badRequest("can't parse JSON"));
    } else {
      call.params = params;
      const aborter = new AbortController();
      res.on("close", () => {
        if (!res.writableFinished) aborter.abort();
      });
      answer = await callMethod(requested, params, aborter.signal, () => settle(call));
    }
    if (answer.status !== 200) call.error_code = answer.status;
    send(res, answer);
    settle(call);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      send(res, errorAnswer({ error_code: 500, description: `Internal Server Error: ${String(err)}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  const apiRoot = `http://127.0.0.1:${port}`;

  async function postToWebhook(
    body: string,
    secretToken: string | null | undefined,
  ): Promise<{ status: number; body: string }> {
    if (!webhook) throw new Error("fake telegram: no webhook is set (call setWebhook first)");
    const headers: Record<string, string> = { "content-type": "application/json" };
    const secret = secretToken === undefined ? webhook.secret_token : secretToken;
    if (secret !== undefined && secret !== null) headers["x-telegram-bot-api-secret-token"] = secret;
    const res = await fetch(webhook.url, { method: "POST", headers, body });
    return { status: res.status, body: await res.text() };
  }

  return {
    apiRoot,
    token,
    botId,
    botUsername,
    calls,
    sent: (chatId) =>
      calls
        .filter(
          (c) =>
            c.method === "sendMessage" &&
            c.error_code === undefined &&
            (chatId === undefined || String(c.params.chat_id) === String(chatId)),
        )
        .map((c) => c.params),
    callsOf: (method) => calls.filter((c) => c.method.toLowerCase() === method.toLowerCase()),
    waitForCall: (method, predicate = () => true, timeoutMs = 5000) =>
      new Promise<TelegramCall>((resolve, reject) => {
        const check = () => {
          const found = calls.find(
            (c) => settledCalls.has(c) && c.method.toLowerCase() === method.toLowerCase() && predicate(c),
          );
          if (!found) return;
          callListeners.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          callListeners.delete(check);
          reject(new Error(`fake telegram: no ${method} call within ${timeoutMs} ms`));
        }, timeoutMs);
        callListeners.add(check);
        check();
      }),
    pushUpdate: (update) => {
      const stored = withUpdateId(update);
      updates.push(stored);
      updates.sort((a, b) => updateId(a) - updateId(b));
      if (poll) poll.finish(okAnswer(takeUpdates(poll.limit)));
      return updateId(stored);
    },
    get pendingUpdates() {
      return updates;
    },
    failNext: (method, failure, times = 1) => {
      const key = method.toLowerCase();
      const queue = failures.get(key) ?? [];
      for (let k = 0; k < times; k++) queue.push(failure);
      failures.set(key, queue);
    },
    get webhook() {
      return webhook ? { ...webhook } : undefined;
    },
    postWebhook: (update, secretToken) => postToWebhook(JSON.stringify(withUpdateId(update)), secretToken),
    postWebhookRaw: (body, secretToken) => postToWebhook(body, secretToken),
    setFile: (fileId, data) => {
      files.set(fileId, typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data));
    },
    stub: (method, handler) => {
      stubs.set(method.toLowerCase(), handler);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      poll?.finish(okAnswer([]));
      // Let the answer to a pending long poll reach the socket before connections are cut.
      await new Promise((r) => setImmediate(r));
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
