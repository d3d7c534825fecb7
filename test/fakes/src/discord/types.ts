import type { APIAttachment, APIMessage, APIUser, MessageType } from "discord-api-types/v10";
import type { FakeApi, RecordedCall } from "../kit/index.js";
import type { FakeDiscordGateway } from "./gateway.js";

/** Options of `startFakeDiscord`. */
export interface FakeDiscordOptions {
  token?: string;
  /** Heartbeat interval the gateway's HELLO asks for (ms; Discord uses ~41 s). */
  heartbeatIntervalMs?: number;
  /** Whether the app may use the privileged Message Content intent (default true). */
  messageContentAllowed?: boolean;
  /** How long an interaction may wait for its first response (ms; Discord: 3 s). */
  interactionResponseMs?: number;
  /** How far back `enforce_nonce` finds an earlier message with the same nonce (ms; Discord: "a few minutes"). */
  nonceWindowMs?: number;
  /** `session_start_limit.remaining` of GET /gateway/bot: identifies left today (default 999; 0: used up). */
  sessionStartsRemaining?: number;
  /** Listen on this port (default: any free one), e.g. one an adapter was pointed at while the fake was down. */
  port?: number;
  /** False: the gateway accepts connections but never says HELLO (default true). */
  hello?: boolean;
  /** Fixed ids (snowflakes) instead of generated ones, e.g. when a test names them before the fake starts. */
  ids?: { user?: string; channel?: string; thread?: string; dm?: string; guild?: string };
}

/** One message the bot created through REST (the JSON body as received, and the message Discord made). */
export interface DiscordSentMessage {
  channelId: string;
  body: Record<string, unknown>;
  message: APIMessage;
  /** Who was really pinged, after `allowed_mentions` was applied. */
  pinged: { everyone: boolean; users: string[]; roles: string[] };
  at: number;
  /** Files uploaded with the message (multipart `files[n]`), in attachment order. */
  files?: Array<{ filename: string; contentType?: string | undefined; data: Buffer }>;
}

/**
 * One REST request the fake received with a valid token. `method` is the HTTP
 * method and route template (`POST /channels/:id/messages`), the kit's key for
 * `failNext`, `callsOf` and `waitForCall`; `params` is the JSON body.
 */
export interface DiscordCall extends RecordedCall {
  /** The path after `/api/v10`, e.g. `/channels/123/messages`. */
  route: string;
  body: unknown;
  status: number;
}

/** An interaction the fake created, with how the bot answered it. */
export interface FakeInteraction {
  id: string;
  token: string;
  name: string;
  channelId: string;
  createdAt: number;
  /** When the first callback (e.g. type 5, deferred) arrived. */
  respondedAt?: number;
  callbackType?: number;
  /** The content of the original response (set by a type-4 callback or PATCH @original). */
  content?: string;
  followups: string[];
}

/** A scripted failure for the next request of a route. */
export interface DiscordFailure {
  status: 429 | 500 | 401 | 403 | 404;
  /** For 429: seconds (float) until the bucket resets. */
  retryAfter?: number;
  /** For 429: a global rate limit (X-RateLimit-Global, scope "global"). */
  global?: boolean;
  /** Discord's JSON error code (default: 403 Missing Permissions 50013, 404 Unknown Channel 10003). */
  code?: number;
  /** Discord's error message (default: the code's). */
  message?: string;
}

/** A running fake Discord. */
export interface FakeDiscord {
  /** Pass as discord.js `rest.api`, e.g. `http://127.0.0.1:PORT/api`. */
  readonly restApi: string;
  readonly token: string;
  readonly bot: APIUser;
  readonly applicationId: string;
  readonly guildId: string;
  /** The bot's own role in the guild (its managed integration role). */
  readonly botRoleId: string;
  /** A guild text channel, and a public thread in it. */
  readonly channelId: string;
  readonly threadId: string;
  /** A human user, and the DM channel between them and the bot. */
  readonly user: APIUser;
  readonly dmChannelId: string;
  readonly gateway: FakeDiscordGateway;
  /** Every REST call, failed ones too (the kit's recorder: `callsOf`, `waitForCall`, `failNext`). */
  readonly api: FakeApi<DiscordCall, DiscordFailure>;
  readonly calls: DiscordCall[];
  /** Messages the bot created, in creation order (optionally in one channel). */
  sent(channelId?: string): DiscordSentMessage[];
  /** The bot's messages in a channel as Discord shows them now (edits applied, deleted ones gone), with their edit counts. */
  shown(channelId: string): Array<DiscordSentMessage & { edits: number }>;
  /** The bot's own reactions on a message, as emoji. */
  reactions(messageId: string): string[];
  /** Typing indicators the bot triggered, by channel id. */
  readonly typing: string[];
  /** When each `typing` call came (epoch ms), in the same order. */
  readonly typingAt: number[];
  /** Application commands registered, by scope (`global` or the guild id). */
  readonly commands: Map<string, Array<Record<string, unknown>>>;
  readonly interactions: FakeInteraction[];
  /** A user writes in a channel (a MESSAGE_CREATE on the gateway); returns the message. */
  userMessage(options: UserMessageOptions): APIMessage;
  /** The MESSAGE_CREATE dispatch data of a user's message, without sending it (e.g. to mutate it first). */
  messageCreatePayload(options: UserMessageOptions): Record<string, unknown>;
  /** Dispatches a MESSAGE_CREATE for an existing message again (a replay). */
  redeliver(message: APIMessage): void;
  /** A user runs a slash command (an INTERACTION_CREATE on the gateway). */
  slashCommand(
    name: string,
    options?: { channelId?: string; args?: Array<{ name: string; value: string }>; user?: APIUser },
  ): FakeInteraction;
  /** The next `times` requests of a route template (e.g. `POST /channels/:id/messages`) fail. */
  failNext(route: string, failure: DiscordFailure, times?: number): void;
  /**
   * The next request of a route template is carried out (a message is created) but never answered,
   * as when the bot's process dies between Discord's success and reading the answer.
   */
  holdNextResponse(route: string): void;
  /** Attachment paths downloaded from the fake's CDN, in order. */
  readonly downloads: string[];
  close(): Promise<void>;
}

/** What a user's message looks like. */
export interface UserMessageOptions {
  channelId: string;
  content: string;
  /** Author: the fake's human user by default. */
  author?: APIUser;
  /** Prefix the content with a mention of the bot user (`<@id>`). */
  mentionBot?: boolean;
  /** Prefix the content with a mention of the bot's role (`<@&id>`). */
  mentionBotRole?: boolean;
  /** Reply to this message (a `message_reference`, with `referenced_message` filled in). */
  replyTo?: string;
  /** Files attached; with `data`, the fake's CDN serves the bytes at the attachment's `url`. */
  attachments?: Array<
    Pick<APIAttachment, "filename" | "size"> & {
      content_type?: string;
      data?: Buffer | string;
      chunked?: boolean;
    }
  >;
  /** Sent through a webhook (`webhook_id` set). */
  webhook?: boolean;
  /** Message type (default 0, DEFAULT; 19 for replies); e.g. 7 for a system "member joined". */
  type?: MessageType;
}
