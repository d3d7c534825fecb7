import type { RecordedCall } from "../kit/index.js";

// A local fake of the Telegram Bot API (https://core.telegram.org/bots/api), faithful where adapters
// tend to get things wrong: getUpdates offset/long-poll/409 semantics, webhook secrets, HTML parse
// errors, the 4096 limit, and error envelopes (429 with parameters.retry_after, 403 blocked, ...).
// Only grammY *types* are used by the fake, so it has no runtime dependency on grammY.

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
  /** Listen on this port (e.g. the Bot API coming back where the adapter knows it); default a free one. */
  port?: number;
}

/** One Bot API call the fake received (with a valid token), in arrival order. */
export interface TelegramCall extends RecordedCall {
  /** Canonical method name, e.g. "sendMessage" (Telegram matches method names case-insensitively). */
  method: string;
  /** Set once answered: the error code when the call failed (injected or real validation error). */
  error_code?: number;
  /** When the answer was sent (ms since epoch; a long poll's ends when it returns or its client goes away). */
  answeredAt?: number;
  /** The client's TCP port: calls of one process share its kept-alive connections, another process has its own. */
  remotePort?: number;
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
  /** 400 to a basic group upgraded to a supergroup, naming the supergroup's id as `migrate_to_chat_id`. */
  groupUpgraded: (supergroupId: number): TelegramFailure => ({
    error_code: 400,
    description: "Bad Request: group chat was upgraded to a supergroup chat",
    migrate_to_chat_id: supergroupId,
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
  /** The params of the *successful* `sendMessage`, `sendPhoto` and `sendDocument` calls, optionally only those for one chat. */
  sent(chatId?: number | string): Array<Record<string, unknown>>;
  /** The bot's messages in a chat as Telegram shows them now (edits applied, deleted ones gone), in order. */
  shown(chatId: number | string): import("./store.js").StoredMessage[];
  /** The bot's reaction emojis on a message. */
  reactions(chatId: number | string, messageId: number): string[];
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
  /** Removes a `stub`: the method answers as the fake implements it again (or 404). */
  unstub(method: string): void;
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
