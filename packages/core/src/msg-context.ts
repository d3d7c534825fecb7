import { z } from "zod";

/** Chat kinds every channel maps onto. */
export const ChatTypeSchema = z.enum(["direct", "group", "channel"]);
/** A chat kind: a one-to-one DM, a group, or a broadcast channel. */
export type ChatType = z.infer<typeof ChatTypeSchema>;

/** Where a reply goes: the same place the message came from. */
export const ReplyTargetSchema = z
  .object({
    channel: z.string().min(1),
    accountId: z.string().min(1),
    chatId: z.string().min(1),
    threadId: z.string().min(1).optional(),
    replyToMessageId: z.string().min(1).optional(),
  })
  .strict();
/** Where a reply goes; segments for one target (chat + thread) are delivered in order. */
export type ReplyTarget = z.infer<typeof ReplyTargetSchema>;

/** One attachment, referenced on the platform; downloaded only on demand. */
export const MediaSchema = z
  .object({
    kind: z.enum(["image", "audio", "voice", "video", "document", "sticker", "other"]),
    mime: z.string().min(1),
    size: z.number().int().nonnegative().optional(),
    /** The file name the sender gave it, when the platform has one (documents); photos and voice notes have none. */
    name: z.string().min(1).max(512).optional(),
    /** The platform's handle to fetch it by (`ChannelAdapter.fetchMedia`): a file id, a URL, a message key. */
    ref: z.string().min(1),
  })
  .strict();
/** An attachment of an inbound message. */
export type Media = z.infer<typeof MediaSchema>;

const SenderSchema = z
  .object({
    id: z.string().min(1),
    name: z.string().optional(),
    username: z.string().optional(),
    isBot: z.boolean().default(false),
  })
  .strict();

const ChatSchema = z
  .object({ type: ChatTypeSchema, id: z.string().min(1), title: z.string().optional() })
  .strict();

const ReplyToSchema = z
  .object({ messageId: z.string().min(1), senderId: z.string().optional(), body: z.string().optional() })
  .strict();

/**
 * What an adapter knows about one inbound message, before the hub derives
 * anything from it. Adapters produce this; `finalizeInboundContext` turns it
 * into a `MsgContext`.
 */
export const AdapterFieldsSchema = z
  .object({
    channel: z
      .string()
      .min(1)
      .regex(/^[a-z][a-z0-9-]*$/, "must be lowercase letters, digits and dashes"),
    accountId: z.string().min(1).default("default"),
    messageId: z.string().min(1),
    chat: ChatSchema,
    threadId: z.string().min(1).optional(),
    sender: SenderSchema,
    body: z.string(),
    wasMentioned: z.boolean().default(false),
    /**
     * Its answer opens a thread of its own on it (a Slack channel message, answered in a thread on it): it runs
     * as a turn of its own, never steered into or collected with a run that answers in another thread.
     */
    ownThread: z.boolean().optional(),
    replyTo: ReplyToSchema.optional(),
    media: z.array(MediaSchema).default([]),
    timestamp: z.number().int().nonnegative(),
    /** Reply to the user's message (groups usually want this). */
    replyToMessageId: z.string().min(1).optional(),
    /**
     * Route to this session instead of deriving one. Only trusted entries (the
     * authenticated gateway) set it.
     */
    sessionKey: z.string().min(1).optional(),
    /** Set by the entry when it knows the sender may run commands (an authenticated gateway client). */
    commandAuthorized: z.boolean().default(false),
    /**
     * Set by the entry when the sender is trusted not to flood: the gateway's owner only. Every other sender,
     * a gateway client with a narrower token included, spends the flood limits' tokens.
     */
    floodExempt: z.boolean().default(false),
  })
  .strict();
/** Adapter-side fields of an inbound message (input of `finalizeInboundContext`). */
export type AdapterFields = z.input<typeof AdapterFieldsSchema>;

/** The single, finalized source of truth about one inbound message. */
export const MsgContextSchema = z
  .object({
    channel: z.string().min(1),
    accountId: z.string().min(1),
    messageId: z.string().min(1),
    chat: ChatSchema,
    threadId: z.string().min(1).optional(),
    sender: SenderSchema,
    body: z.string(),
    wasMentioned: z.boolean(),
    /** See `AdapterFields.ownThread`. */
    ownThread: z.boolean().optional(),
    replyTo: ReplyToSchema.optional(),
    media: z.array(MediaSchema),
    timestamp: z.number().int().nonnegative(),
    sessionKey: z.string().min(1),
    replyTarget: ReplyTargetSchema,
    dedupeKey: z.string().min(1),
    commandAuthorized: z.boolean().default(false),
    floodExempt: z.boolean().default(false),
  })
  .strict();
/** A finalized inbound message: validated, sanitized, with its session and reply target derived. */
export type MsgContext = z.infer<typeof MsgContextSchema>;

/** One unit of session work queued by admission: answer a message, or only record it as context. */
export const RunRequestSchema = z
  .object({
    runId: z.string().min(1),
    ctx: MsgContextSchema,
    /** Record the message in the transcript without answering (an unmentioned group message). */
    contextOnly: z.boolean().optional(),
    /** A session command that must run in order with the session's runs (e.g. `/new`). */
    command: z.enum(["new"]).optional(),
    /** Collect mode: answer every message collected while the previous run was busy, in one turn. */
    collect: z.boolean().optional(),
    /**
     * Its own turn after the session's running one whatever the queue mode: a thread message admitted into its
     * chat's session (see the dispatcher), whose running run may answer elsewhere (another thread).
     */
    ownTurn: z.boolean().optional(),
  })
  .strict();

/** How a message that arrives while its session is running is handled. */
export const QueueModeSchema = z.enum(["steer", "followup", "collect", "interrupt"]);
/**
 * `steer`: injected into the running run at its next tool-batch boundary;
 * `followup`: its own turn after the running one; `collect`: batched with
 * others into one follow-up turn; `interrupt`: the running run is aborted and
 * this one runs next.
 */
export type QueueMode = z.infer<typeof QueueModeSchema>;

/** A queued run request (the item of a session's lane). */
export type RunRequest = z.infer<typeof RunRequestSchema>;
