import type { HostedFileInput, RecordedCall } from "../kit/index.js";

/** Options of `startFakeSlack`. */
export interface FakeSlackOptions {
  botToken?: string;
  appToken?: string;
  signingSecret?: string;
  botUserId?: string;
  botId?: string;
  teamId?: string;
  /** A fixed port for the Web API (Slack coming back at the address the adapter knows); default a free one. */
  port?: number;
}

/** One Web API call the fake received, in arrival order. */
export interface SlackCall extends RecordedCall {
  /** Set once answered: the `error` of an `ok: false` answer, or `ratelimited` for a 429. */
  error?: string;
}

/** A message in a conversation (sent by a user through an event, or posted by the bot). */
export interface SlackMessage {
  channel: string;
  ts: string;
  text: string;
  user: string;
  bot_id?: string;
  thread_ts?: string;
  metadata?: { event_type: string; event_payload?: Record<string, unknown> };
  reactions: Map<string, Set<string>>;
  /** How many chat.update calls changed it. */
  edits?: number;
  /** Files shared with the message (files.completeUploadExternal). */
  files?: SlackFile[];
}

/** A file uploaded through files.getUploadURLExternal and its upload URL. */
export interface SlackFile {
  id: string;
  name: string;
  title: string;
  size: number;
  /** The bytes POSTed to the upload URL (undefined until then). */
  data?: Buffer;
}

/** An injected failure: an `ok: false` error, or HTTP 429 with Retry-After seconds. */
export type SlackFailure = { error: string } | { status: 429; retryAfter: number };

/** How a delivery of an event is signed and which retry headers it carries. */
export interface DeliveryOptions {
  retryNum?: number;
  retryReason?: string;
  /** Use this signature instead of the correct one. */
  signature?: string;
  /** Sign with this Unix timestamp (seconds) instead of now. */
  timestamp?: number;
  /** The request's Content-Type (Slack's events are `application/json`; its slash commands and interactivity post forms). */
  contentType?: string;
}

/** A running fake Slack. */
export interface FakeSlack {
  /** Pass as Bolt's `clientOptions.slackApiUrl` (ends with `/`). */
  readonly apiUrl: string;
  readonly botToken: string;
  readonly appToken: string;
  readonly signingSecret: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly teamId: string;
  readonly calls: SlackCall[];
  callsOf(method: string): SlackCall[];
  /** Resolves with the first answered call of `method` matching `predicate`; rejects after `timeoutMs`. */
  waitForCall(
    method: string,
    predicate?: (call: SlackCall) => boolean,
    timeoutMs?: number,
  ): Promise<SlackCall>;
  /** Implements an extra Web API method; the handler's object is merged into `{ ok: true }`. */
  stub(method: string, handler: (params: Record<string, unknown>) => unknown): void;
  /** Messages the bot posted (chat.postMessage, and file shares by files.completeUploadExternal), optionally in one channel, in order. */
  posted(channel?: string): SlackMessage[];
  /** The message with this `ts` in a channel, if Slack has it. */
  messageAt(channel: string, ts: string): SlackMessage | undefined;
  /** Reactions currently on a message. */
  reactionsOn(channel: string, ts: string): string[];
  /** The next `times` calls of `method` fail like this. */
  failNext(method: string, failure: SlackFailure, times?: number): void;
  /** The next call of `method` is answered (and, for chat.postMessage, carried out) only after `ms`. */
  slowNext(method: string, ms: number): void;
  /** Where Events API deliveries go (the hub's `/slack/events`). */
  eventsUrl: string | undefined;
  /** A user's message as Slack stores it; returns its `ts` (use it in the event). */
  userMessage(channel: string, user: string, text: string, threadTs?: string): SlackMessage;
  /**
   * Stores a file a user shared and returns its file object as Slack puts it in a `file_share`
   * message's `files` (`url_private` needs the bot token as Bearer, else Slack's sign-in page).
   */
  uploadFile(file: HostedFileInput & { user?: string }): Record<string, unknown>;
  /** File paths downloaded with the bot token, in order. */
  readonly downloads: string[];
  /** Wraps an event in an `event_callback` envelope as Slack does. */
  envelope(event: Record<string, unknown>): Record<string, unknown>;
  /** POSTs an envelope to `eventsUrl`, signed like Slack. */
  deliver(
    envelope: Record<string, unknown>,
    options?: DeliveryOptions,
  ): Promise<{ status: number; body: string }>;
  /** POSTs a raw body to `eventsUrl`, signed like Slack. */
  deliverRaw(body: string, options?: DeliveryOptions): Promise<{ status: number; body: string }>;
  /** Sends an envelope over the Socket Mode connection; resolves true when acked, false after `timeoutMs`. */
  deliverSocket(
    envelope: Record<string, unknown>,
    options?: { retryAttempt?: number; timeoutMs?: number },
  ): Promise<boolean>;
  /** Asks the connected Socket Mode client to reconnect, like Slack does (`type: "disconnect"`). */
  disconnectSocket(reason?: "refresh_requested" | "link_disabled" | "warning"): void;
  /** How many Socket Mode connections were opened so far. */
  readonly socketConnections: number;
  /** Whether a Socket Mode client is connected. */
  readonly socketConnected: boolean;
  close(): Promise<void>;
}
