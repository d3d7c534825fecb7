import { ChannelAccessSchema, ChannelPacingSchema } from "@hub/core";
import { z } from "zod";

/** One linked WhatsApp account's config (`channels.whatsapp`, or each `channels.whatsapp.accounts.<id>`). */
export const WhatsAppConfigSchema = ChannelAccessSchema.extend({
  /**
   * Folder of the linked device's credentials; relative paths are inside the
   * hub's state directory. Default `whatsapp/<accountId>`.
   */
  authDir: z.string().min(1).optional(),
  /** Longest text of one sent message (characters after formatting); longer answers are split. */
  textLimit: z.number().int().min(200).max(65_000).default(4000),
  /** Messages older than this (ms) when they arrive (offline backlog, replays) are not answered. */
  maxMessageAgeMs: z
    .number()
    .int()
    .min(10_000)
    .max(20 * 60_000)
    .default(10 * 60_000),
  /** Least time between two sends to one direct chat (ms). */
  sendIntervalMs: z.number().int().min(0).max(60_000).default(1000),
  /** Least time between two sends to one group (ms). */
  groupSendIntervalMs: z.number().int().min(0).max(60_000).default(2500),
  /**
   * Reply pacing, as every channel has it: `chatIntervalMs` and `groupIntervalMs` win over the two
   * keys above, `maxSendsPerSecond` (default 5) caps the account.
   */
  pacing: ChannelPacingSchema.optional(),
  /** Show "typing…" (presence `composing`) while a run is active, `paused` after it. */
  presence: z.boolean().default(true),
  /** How long one hub process holds the account before another may take over when it dies (ms). */
  leaseMs: z.number().int().min(3000).max(300_000).default(30_000),
  /** Reconnect backoff after a recoverable close: first wait and cap (ms). */
  reconnectInitialMs: z.number().int().min(100).max(60_000).default(1000),
  reconnectMaxMs: z.number().int().min(1000).max(600_000).default(60_000),
}).strict();

/** A validated WhatsApp account config. */
export type WhatsAppConfig = z.infer<typeof WhatsAppConfigSchema>;
