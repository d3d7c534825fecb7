import type { FetchedMedia, FetchMediaOptions } from "./media.js";
import type { AdapterFields, Media, ReplyTarget } from "./msg-context.js";

/** Which markdown flavour a channel renders (the reply layer converts to it). */
export type MarkdownDialect =
  | "commonmark"
  | "telegram-html"
  | "discord"
  | "slack-mrkdwn"
  | "whatsapp"
  | "plain";

/** What a channel can do; the reply layer and the agent adapt to it. */
export interface ChannelCapabilities {
  /** Longest text one message may carry, in characters, after rendering. */
  textLimit: number;
  markdown: MarkdownDialect;
  threads: boolean;
  typing: boolean;
  /**
   * The adapter can edit (`edit`) and delete (`deleteMessage`) its own messages, so an
   * answer can stream as a live preview (`channels.<name>.streaming: "preview"`).
   */
  edit: boolean;
  /** Whether the channel can send files and images (`OutboundSegment.attachment`); without it a file becomes a text note. */
  files?: boolean;
  /** Least time between two sends to one chat, so the platform never throttles us. */
  minSendIntervalMs?: number;
  /**
   * Streamed answers are sent in blocks of at least this many characters
   * (paragraphs are merged until then), so a chat gets a few full messages
   * rather than one per paragraph. 1 sends each paragraph as it completes.
   */
  streamMinChars?: number;
  /** Whether a person can answer in this channel (approvals); false makes `ask` tools deny rather than wait. */
  interactive?: boolean;
  /**
   * How long a run may take before the typing indicator is shown (default `DEFAULT_TYPING_DELAY_MS`;
   * 0: at once). See `typingDelayOf`.
   */
  typingDelayMs?: number;
  /** Most sends per second for one account across all its chats. */
  maxSendsPerSecond?: number;
  /**
   * Whether the platform delivers a message again that the hub did not take (a webhook answered
   * with a 5xx, a polling offset held, a Socket Mode envelope not acked, a client told to retry).
   * Default true. False (a Discord gateway, a WhatsApp socket): a message refused at the edge is
   * gone, so a draining hub still admits it durably (it runs after the restart, or in another hub
   * process) instead of asking for a redelivery that never comes.
   */
  redelivers?: boolean;
  /**
   * Length of a segment as the platform counts it after rendering (e.g. Telegram
   * HTML); chunking keeps this within `textLimit`. Defaults to the text length.
   */
  measure?: (markdown: string) => number;
}

/**
 * How long a run may take before typing is shown unless the channel sets its own. Typing is a platform
 * call on every channel (Telegram's sendChatAction, Discord's typing route, Slack's status set and
 * cleared, WhatsApp's `composing` and `paused`): about a second spares it for quick answers.
 */
export const DEFAULT_TYPING_DELAY_MS = 1000;

/** How long a run on a channel with these capabilities may take before typing is shown. */
export function typingDelayOf(capabilities: Pick<ChannelCapabilities, "typingDelayMs"> | undefined): number {
  return capabilities?.typingDelayMs ?? DEFAULT_TYPING_DELAY_MS;
}

/** One piece of a reply, small enough for the channel, in its place in the reply. */
export interface OutboundSegment {
  /** The reply (usually the runId) this segment belongs to. */
  replyId: string;
  /** The run whose answer it is, where that is not `replyId` (a resumed attempt's reply: `<runId>.<attempt>`). */
  runId?: string;
  /** 0-based position within its reply. */
  index: number;
  text: string;
  /** The final segment of its reply. */
  last?: boolean;
  /** A file or image this segment carries; `text` is then its caption (may be empty). */
  attachment?: OutboundAttachment;
}

/**
 * The run whose answer a segment is part of: its `runId` when its reply is an attempt of that run (the first
 * attempt's reply is the run's id, a resumed one's `<runId>.<attempt>`), else the reply's own id (a notice
 * about the run, such as `<runId>.failed`, is a message of its own).
 */
export function answeredRunOf(segment: Pick<OutboundSegment, "replyId" | "runId">): string {
  const { replyId, runId } = segment;
  if (runId === undefined || !replyId.startsWith(`${runId}.`)) return replyId;
  return /^\d+$/.test(replyId.slice(runId.length + 1)) ? runId : replyId;
}

/** A file or image sent as one segment of a reply, read from the delivery process's outbox. */
export interface OutboundAttachment {
  /** Where the delivery process reads the bytes (a file in `<state dir>/outbox`). */
  path: string;
  /** The name the recipient sees. */
  filename: string;
  mime: string;
  /** `image` is shown inline where the platform can (Telegram `sendPhoto`); `file` is a document. */
  kind: "image" | "file";
  /** Size in bytes. */
  size: number;
}

/** What a platform said about a send it accepted. */
export interface SendResult {
  /** The platform's id of the message it created, when it has one. */
  messageId?: string;
}

/** A send that must not be retried as is (blocked bot, bad request): the segment fails for good. */
export class PermanentSendError extends Error {
  /**
   * The chat refuses every message, not only this one (the bot blocked or removed, the chat gone, the
   * token refused): nothing sent in its place (a note) would arrive either.
   */
  readonly chatRefuses: boolean;
  constructor(message: string, options?: { cause?: unknown; chatRefuses?: boolean }) {
    super(message, options);
    this.name = "PermanentSendError";
    this.chatRefuses = options?.chatRefuses ?? false;
  }
}

/** Whether an HTTP status refusing a send means the chat refuses every message (see `chatRefuses`). */
export function chatRefusesStatus(status: number): boolean {
  return status === 401 || status === 403 || status === 404 || status === 410;
}

/**
 * The longest wait a platform's "retry after" gets at once (an hour): a larger one (or a timer's overflow past
 * 2^31 ms, which Node fires at once) is waited in hours, each ending with another try.
 */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * A wait in ms as told by a platform, made usable: not a number, 0 or below is 1 s (Slack can send
 * `Retry-After: 0`, and `0.5` reads as 0: no advice, and retrying at once would only be told again), above
 * the cap is the cap.
 */
export function usableWaitMs(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) return 1000;
  return Math.min(Math.ceil(ms), MAX_RETRY_AFTER_MS);
}

/** The platform asked us to slow down; the whole reply target waits `retryAfterMs`. */
export class RateLimitedError extends Error {
  readonly retryAfterMs: number;
  constructor(retryAfterMs: number, message?: string) {
    const wait = usableWaitMs(retryAfterMs);
    super(message ?? `rate limited; retry after ${wait} ms`);
    this.retryAfterMs = wait;
    this.name = "RateLimitedError";
  }
}

/**
 * Receives inbound messages from an adapter. Resolves with what the hub did
 * with the message (see `InboundResult`); it does not throw: a transient
 * failure on our side is `retry`, input that can never be accepted is `rejected`.
 */
export type InboundHandler = (
  fields: AdapterFields,
  /** `runId`: an entry's own idempotency key becomes the run id (the web chat's `chat.send`); platforms leave it unset. */
  options?: { runId?: string },
) => Promise<import("./plugin.js").InboundResult>;

/**
 * The contract every channel adapter implements. An adapter does platform I/O
 * only: it turns platform events into `AdapterFields` and sends segments; it
 * never calls the model or writes a transcript.
 */
export interface ChannelAdapter {
  /** The channel name, e.g. `telegram`; the `channel` of every message it emits. */
  readonly channel: string;
  readonly capabilities: ChannelCapabilities;
  /** Connects to the platform and starts emitting inbound messages to `onInbound`. */
  start(onInbound: InboundHandler): Promise<void>;
  /**
   * Disconnects; resolves when no more inbound messages will be emitted. May be called while
   * `start` is still connecting: that start then settles at once (throwing `ChannelStoppedError`),
   * so a platform that never answers cannot hold the hub's shutdown.
   */
  stop(): Promise<void>;
  /**
   * Stops taking messages in where the platform keeps them for later (Telegram's polling) and lets
   * another process of the installation have the connection only one may hold: called when the hub
   * starts draining, so a standby process takes the platform's messages over while this one
   * finishes its runs. Sending keeps working until `stop`. Channels whose platform would not
   * deliver a message again (a gateway's events) keep taking them in and omit it.
   */
  pauseIntake?(): Promise<void>;
  /**
   * Sends one segment to a reply target. Throws `RateLimitedError` to delay the
   * target, `PermanentSendError` to give the segment up; anything else is retried.
   * `signal` aborts a send that took too long; the caller waits for the send to
   * settle either way, so an abandoned send can never land after a later one.
   */
  send(
    segment: OutboundSegment,
    target: ReplyTarget,
    options?: { signal?: AbortSignal },
  ): Promise<SendResult>;
  /** Shows "typing…" in the target chat, if the channel can. */
  sendTyping(target: ReplyTarget): Promise<void>;
  /**
   * Replaces the text of a message this adapter sent (a live preview, see
   * `capabilities.edit`). Editing a message to the text it already shows
   * succeeds. Throws like `send`: `RateLimitedError`, `PermanentSendError` when the
   * message is gone or can no longer be edited; anything else is retried.
   */
  edit?(
    messageId: string,
    segment: OutboundSegment,
    target: ReplyTarget,
    options?: { signal?: AbortSignal },
  ): Promise<void>;
  /** Deletes a message this adapter sent (an abandoned live preview); one already gone is success. */
  deleteMessage?(target: ReplyTarget, messageId: string): Promise<void>;
  /**
   * Sets this bot's reaction on a message in the target chat (`emoji`, e.g. "👀"),
   * or removes it (`null`). The acknowledgement reaction of a run uses it. `previous` is the
   * reaction the bot set, for a platform that removes one by naming it, when this process did
   * not set it (a reaction a crash left, removed after the restart).
   */
  react?(target: ReplyTarget, messageId: string, emoji: string | null, previous?: string): Promise<void>;
  /** Least time between two sends to this target, when it differs by chat (e.g. groups are slower). */
  sendIntervalMs?(target: ReplyTarget): number;
  /**
   * Starts downloading one attachment of an inbound message (`Media.ref`), as a
   * stream of at most `maxBytes`: throws `MediaTooLargeError` before the
   * download when the size is known to be over it, and the stream throws it
   * when the bytes pass it. Channels whose messages carry no attachments omit it.
   */
  fetchMedia?(media: Media, options: FetchMediaOptions): Promise<FetchedMedia>;
  /** HTTP endpoints to mount on the gateway (webhooks). */
  httpRoutes?(): HttpRoute[];
  /** The connection state of this adapter's account (connecting, connected, reconnecting, failed...). */
  status?(): import("./plugin.js").ChannelStatus;
  /** The account this adapter serves (`default` when there is one). */
  readonly accountId?: string;
}

/** An HTTP endpoint an adapter needs on the gateway's server (e.g. a platform webhook). */
export interface HttpRoute {
  method: "POST" | "GET";
  path: string;
  /**
   * Answered under any Host name, also on a gateway that listens on loopback: a platform's webhook
   * reached through a reverse proxy keeps its public Host, and it checks each request itself
   * (signature or secret). Other routes answer only to names a browser on this machine would use.
   */
  anyHost?: boolean;
  handle(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): Promise<void>;
}

/** Where an adapter keeps its small durable state (e.g. Telegram's polling offset). */
export interface AdapterStateStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  /**
   * The values of many keys (undefined: none), in the order asked, in one round trip: an adapter that
   * reads per-item state back after a restart (Discord's mark per channel) would otherwise wait one
   * round trip per item while live messages wait behind it. Optional: without it, keys are read one by one.
   */
  getMany?(keys: string[]): Promise<Array<string | undefined>>;
  /**
   * Removes keys, so state about things an adapter forgets (a channel idle for long) does not stay
   * forever. Optional: without it, the keys stay.
   */
  delete?(keys: string[]): Promise<void>;
}
