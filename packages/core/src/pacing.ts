import { z } from "zod";
import type { ChannelCapabilities } from "./channel.js";

/**
 * `channels.<name>.pacing`: how fast replies may go out. Unset keys keep the
 * platform's limits; 0 turns a limit off (a self-hosted or test platform that
 * does not throttle).
 */
export const ChannelPacingSchema = z
  .object({
    /** Least time between two sends to one chat, in ms. */
    chatIntervalMs: z.number().int().nonnegative().optional(),
    /** Least time between two sends to one group chat, in ms (platforms throttle groups harder). */
    groupIntervalMs: z.number().int().nonnegative().optional(),
    /** Most sends per second for the whole account; 0 is unlimited. */
    maxSendsPerSecond: z.number().int().nonnegative().optional(),
  })
  .strict();

/** A channel's configured pacing (see `ChannelPacingSchema`). */
export type ChannelPacing = z.infer<typeof ChannelPacingSchema>;

/**
 * `channels.<name>.pacing` of a platform that limits every chat alike (Discord, Slack): no
 * `groupIntervalMs`, which would be a key that changes nothing.
 */
export const UniformPacingSchema = ChannelPacingSchema.omit({ groupIntervalMs: true }).strict();

/** The platform's own limits, overridden key by key by the configured pacing. */
export interface PacingLimits {
  chatIntervalMs: number;
  groupIntervalMs: number;
  maxSendsPerSecond: number;
}

/** Merges configured pacing over the platform's limits. */
export function resolvePacing(platform: PacingLimits, configured: ChannelPacing | undefined): PacingLimits {
  return {
    chatIntervalMs: configured?.chatIntervalMs ?? platform.chatIntervalMs,
    groupIntervalMs: configured?.groupIntervalMs ?? platform.groupIntervalMs,
    maxSendsPerSecond: configured?.maxSendsPerSecond ?? platform.maxSendsPerSecond,
  };
}

/** The capability fields the ReplyDispatcher paces by, from resolved limits. */
export function pacingCapabilities(
  limits: PacingLimits,
): Pick<ChannelCapabilities, "minSendIntervalMs" | "maxSendsPerSecond"> {
  return { minSendIntervalMs: limits.chatIntervalMs, maxSendsPerSecond: limits.maxSendsPerSecond };
}
