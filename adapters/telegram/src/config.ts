import { ChannelAccessSchema, ChannelPacingSchema } from "@hub/core";
import { z } from "zod";

const OFFICIAL_API_HOST = "api.telegram.org";

/** One Telegram bot's config (`channels.telegram`, or each `channels.telegram.accounts.<id>`). */
export const TelegramConfigSchema = ChannelAccessSchema.extend({
  botToken: z.string().min(1).optional(),
  apiRoot: z.url().default("https://api.telegram.org"),
  mode: z.enum(["polling", "webhook"]).default("polling"),
  webhookUrl: z.url().optional(),
  /** Sent back by Telegram in `X-Telegram-Bot-Api-Secret-Token`; setWebhook allows 1–256 of A–Z a–z 0–9 _ -. */
  webhookSecret: z
    .string()
    .min(16, "must be at least 16 characters")
    .max(256, "must be at most 256 characters (Telegram's limit)")
    .regex(/^[A-Za-z0-9_-]+$/, "may hold only letters A-Z and a-z, digits, _ and - (Telegram refuses others)")
    .optional(),
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
})
  .strict()
  .superRefine((config, ctx) => {
    // Telegram's own Bot API sends webhooks to HTTPS only; a self-hosted one (`--local`) takes HTTP too.
    const official = new URL(config.apiRoot).hostname === OFFICIAL_API_HOST;
    if (official && config.webhookUrl && new URL(config.webhookUrl).protocol !== "https:")
      ctx.addIssue({
        code: "custom",
        path: ["webhookUrl"],
        message:
          "must be an https:// URL: Telegram sends webhooks over HTTPS only (a self-hosted Bot API in --local mode takes http://)",
      });
  });

/** A validated Telegram account config. */
export type TelegramConfig = z.infer<typeof TelegramConfigSchema>;
