import { ChannelAccessSchema, ChannelPacingSchema } from "@hub/core";
import { z } from "zod";

/** One Telegram bot's config (`channels.telegram`, or each `channels.telegram.accounts.<id>`). */
export const TelegramConfigSchema = ChannelAccessSchema.extend({
  botToken: z.string().min(1).optional(),
  apiRoot: z.url().default("https://api.telegram.org"),
  mode: z.enum(["polling", "webhook"]).default("polling"),
  webhookUrl: z.url().optional(),
  webhookSecret: z.string().min(16, "must be at least 16 characters").optional(),
  /** Answer posts in channels the bot administers. */
  channelPosts: z.boolean().default(false),
  /** What an edited message does: nothing (`ignore`) or a new turn (`as-new`). */
  editedMessages: z.enum(["ignore", "as-new"]).default("ignore"),
  /** Reply pacing; unset keys keep Telegram's limits (1/s per chat, 1 per 3 s per group, 30/s per bot). */
  pacing: ChannelPacingSchema.optional(),
  /**
   * Polling is held by one hub process at a time through a lease in Redis; another
   * process takes over within this long after the holder dies.
   */
  leaseMs: z.number().int().min(1000).max(300_000).default(10_000),
}).strict();

/** A validated Telegram account config. */
export type TelegramConfig = z.infer<typeof TelegramConfigSchema>;
