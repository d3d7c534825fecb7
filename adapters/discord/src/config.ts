import { ChannelAccessSchema, UniformPacingSchema } from "@hub/core";
import { z } from "zod";

const SnowflakeOrStar = z.string().regex(/^(\d{5,25}|\*)$/, 'must be a Discord id (5 to 25 digits) or "*"');

/** Settings of one channel of a guild (its id as the key, `"*"` for every channel). */
export const DiscordGuildChannelSchema = z
  .object({
    /** Whether the bot answers in this channel (false blocks it). */
    enabled: z.boolean().default(true),
    /** Answer only when mentioned (the guild's setting when absent). */
    requireMention: z.boolean().optional(),
    /** User ids allowed to talk to the bot here (the guild's list when absent; empty: everyone). */
    allowFrom: z.array(z.string()).optional(),
  })
  .strict();

/** Settings of one guild (its id as the key, `"*"` for every guild). */
export const DiscordGuildSchema = z
  .object({
    requireMention: z.boolean().default(true),
    /** User ids allowed to talk to the bot in this guild; empty means everyone. */
    allowFrom: z.array(z.string()).default([]),
    /** Channels the bot answers in (threads follow their parent channel); absent means every channel. */
    channels: z.record(SnowflakeOrStar, DiscordGuildChannelSchema).optional(),
  })
  .strict();
/** The settings of one guild. */
export type DiscordGuild = z.infer<typeof DiscordGuildSchema>;

const DiscordObjectSchema = ChannelAccessSchema.extend({
  /** The bot token (Developer Portal > Bot > Reset Token), or `DISCORD_BOT_TOKEN`. */
  token: z.string().min(1).optional(),
  /** Discord's REST API root; the gateway URL then comes from this API's `/gateway/bot`. */
  restApi: z.url().default("https://discord.com/api"),
  /** Guilds the bot answers in, with channel allowlists; `"*"` for every guild. */
  guilds: z.record(SnowflakeOrStar, DiscordGuildSchema).default({}),
  /** Most characters in one message (Discord's limit is 2,000). */
  textLimit: z.number().int().min(100).max(2000).default(2000),
  /** Most lines in one message, so a long answer never becomes one wall of text (Discord folds tall messages). */
  maxLinesPerMessage: z.number().int().min(10).max(200).default(17),
  /** Register /stop, /new, /status and /queue as slash commands (per configured guild, else global). */
  slashCommands: z.boolean().default(true),
  /** Reply pacing; unset keys keep Discord's limits (1 message per second per channel, 40/s per bot). */
  pacing: UniformPacingSchema.optional(),
  /**
   * The gateway connection is held by one hub process at a time through a lease in
   * Redis; another process takes over within this long after the holder dies.
   */
  leaseMs: z.number().int().min(1000).max(300_000).default(10_000),
}).strict();

/**
 * `channels.discord` (and each `accounts.<id>` entry). When `guilds` is set the
 * adapter enforces it (guild and channel allowlists, per-guild mention rule), so
 * the shared group policy admits every channel it passes on (`groups["*"]`).
 */
export const DiscordConfigSchema = DiscordObjectSchema.transform((c) =>
  Object.keys(c.guilds).length > 0 && !c.groups["*"]
    ? { ...c, groups: { ...c.groups, "*": { requireMention: true, allowFrom: [] } } }
    : c,
);
/** The validated Discord channel config. */
export type DiscordConfig = z.infer<typeof DiscordConfigSchema>;
/** The Discord channel config as written. */
export type DiscordConfigInput = z.input<typeof DiscordConfigSchema>;

/** The rule that applies to a message in a guild channel, or why the bot does not answer there. */
export type GuildRule = { requireMention: boolean; allowFrom: string[] } | { blocked: string };

/**
 * Resolves `guilds` for a message in `guildId`, channel `channelId` (a thread's parent).
 * Empty `guilds` leaves every decision to the shared group policy (`groups`, keyed by channel id).
 */
export function resolveGuildRule(
  guilds: Record<string, DiscordGuild>,
  guildId: string,
  channelId: string,
): GuildRule | undefined {
  if (Object.keys(guilds).length === 0) return undefined;
  const guild = guilds[guildId] ?? guilds["*"];
  if (!guild) return { blocked: `guild ${guildId} is not in channels.discord.guilds` };
  const channel = guild.channels ? (guild.channels[channelId] ?? guild.channels["*"]) : undefined;
  if (guild.channels && !channel)
    return { blocked: `channel ${channelId} is not in guild ${guildId}'s channels` };
  if (channel?.enabled === false) return { blocked: `channel ${channelId} is disabled` };
  return {
    requireMention: channel?.requireMention ?? guild.requireMention,
    allowFrom: channel?.allowFrom ?? guild.allowFrom,
  };
}

/**
 * What `guilds` says about `senderId` writing in `channelId` of `guildId`: blocked
 * (and why), or allowed with its mention rule; undefined when `guilds` is empty.
 */
export function guildAccess(
  guilds: Record<string, DiscordGuild>,
  guildId: string,
  channelId: string,
  senderId: string,
): { blocked: string } | { requireMention: boolean } | undefined {
  const rule = resolveGuildRule(guilds, guildId, channelId);
  if (!rule || "blocked" in rule) return rule;
  if (rule.allowFrom.length > 0 && !rule.allowFrom.includes(senderId))
    return { blocked: `sender ${senderId} is not in this guild's or channel's allowFrom` };
  return { requireMention: rule.requireMention };
}
