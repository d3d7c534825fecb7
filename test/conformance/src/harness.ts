import type { ChannelAdapter, HubConfigInput, HubLogger } from "@hub/core";
import type { FuzzTarget } from "./fuzz.js";

/** What the bot sent to one chat, as the platform saw it. */
export interface OutboundMessage {
  /** Visible text (markup removed). */
  text: string;
  threadId?: string | undefined;
  replyToMessageId?: string | undefined;
  /** Whether the platform accepted the message's formatting (e.g. balanced HTML). */
  wellFormed: boolean;
  /** A file or image the message carried (its caption is `text`). */
  file?: OutboundFile | undefined;
}

/** A file the bot sent, as the platform received it. */
export interface OutboundFile {
  filename: string;
  /** The bytes that arrived. */
  data: Buffer;
  /** Whether the platform shows it as an image (Telegram photo, WhatsApp image) rather than a document. */
  image?: boolean;
}

/** A file the suite sends in a direct message; the fake platform serves its bytes the platform's way. */
export interface InboundFile {
  kind: "image" | "document" | "voice";
  name: string;
  mime: string;
  bytes: Buffer;
}

/** How a harness starts its platform and builds its adapter (see `ConformanceHarness.start`). */
export interface HarnessStartOptions {
  /** Where the adapter logs (the suite's captured logger). */
  logger?: HubLogger;
  /** The adapter points at an address that refuses connections until `platformUp()`. */
  unreachable?: boolean;
  /** The adapter points at a platform that takes connections and never answers. */
  silent?: boolean;
}

/** A reference to an inbound message the harness injected, so it can be redelivered. */
export type InboundRef = unknown;

/**
 * How the conformance suite drives one channel through its fake platform.
 * Each adapter package provides one; the suite is the same for all (like
 * Hono's shared suite across runtimes).
 */
export interface ConformanceHarness {
  channel: string;
  /** Longest message the platform accepts (visible characters). */
  textLimit: number;
  supportsThreads: boolean;
  /** False for channels that cannot send files (the file becomes a text note). */
  supportsFiles?: boolean;
  /** False for channels without group chats (web chat): the group cases are skipped. */
  supportsGroups?: boolean;
  /**
   * Starts the fake platform and builds the adapter (not started; the hub
   * starts it), logging to `logger` when given. With `unreachable`, the
   * adapter points at an address that refuses connections until `platformUp()`. With `silent`, it
   * points at a platform that takes connections and never answers (a black-holed network).
   */
  start(options?: HarnessStartOptions): Promise<ChannelAdapter | undefined>;
  /** Called with the running hub's gateway (port and token), for channels the hub itself serves (web chat). */
  attach?(hub: { port: number; token: string }): Promise<void>;
  /** Brings the platform up at the address an `unreachable` adapter knows (platforms that support it). */
  platformUp?(): Promise<void>;
  /** Hub config the adapter needs besides its channel (e.g. the gateway port its webhook URL names). */
  hubConfig?(): HubConfigInput;
  stop(): Promise<void>;
  /** The user and group the suite allowlists, in the platform's id form. */
  ids: { user: string; group: string; directChat: string };
  direct(text: string): Promise<InboundRef>;
  group(
    text: string,
    options?: { mention?: boolean; replyToBot?: boolean; threadId?: string },
  ): Promise<InboundRef>;
  /**
   * A direct message carrying a file, as the platform delivers one (Telegram photo/document/voice
   * with its file_id, a Discord attachment on the CDN, a Slack file share with `url_private`, a
   * WhatsApp media message), the text as its caption. Channels without attachments omit it.
   */
  directWithFile?(text: string, file: InboundFile): Promise<InboundRef>;
  /** File downloads the fake platform served so far (to check what was, or was not, fetched). */
  downloads?(): number;
  /** A command addressed to some other bot in the group. */
  commandForAnotherBot(): Promise<void>;
  /** Delivers the same platform event again (a platform retry). */
  redeliver(ref: InboundRef): Promise<void>;
  /** Sends the platform's equivalent of garbage (malformed payload). */
  malformed(): Promise<void>;
  /** The next send answers "rate limited, retry after N seconds" (platforms that rate-limit). */
  rateLimitNextSend?(retryAfterSeconds: number): void;
  /** Messages the bot sent to a chat, in platform order. */
  outbound(chatId: string): OutboundMessage[];
  /**
   * Channels that edit (live previews): the bot's messages in a chat as the platform shows them now
   * (edits applied, deleted ones gone), in order, each with how many edits changed it.
   */
  shown?(chatId: string): Array<OutboundMessage & { edits: number }>;
  /** Channels with reactions: the bot's reactions on an inbound message the harness injected, as the platform shows them. */
  reactionsOn?(ref: InboundRef): string[];
  /** A thread id valid in the suite's group (for platforms with threads). */
  threadId?: string;
  /** Raw payloads for the fuzz and the poison cases (every adapter should provide them). */
  raw?: FuzzTarget & {
    /** A real-shaped payload with `text` from the allowlisted user in the direct chat (answered). */
    allowed(text: string): unknown;
    /** Payloads that can never be accepted (malformed shapes the platform's schema forbids). */
    poison(): unknown[];
    /** Polling platforms: delivers these payloads in one batch (one poll answer), in order. */
    deliverBatch?(payloads: unknown[]): Promise<void>;
  };
}
