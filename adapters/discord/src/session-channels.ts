import { z } from "zod";
import type { ChannelMark } from "./catch-up.js";

// The part of a GUILD_CREATE this reads: its channels and active threads with their newest message's id.
const GuildCreateSchema = z.looseObject({
  channels: z.array(z.looseObject({ id: z.string(), last_message_id: z.string().nullish() })).optional(),
  threads: z.array(z.looseObject({ id: z.string(), last_message_id: z.string().nullish() })).optional(),
});

/**
 * What one gateway session's guild creates said of each channel's newest message (`last_message_id`).
 * A read-back skips a channel only on that word, never on discord.js's cache: after a new login in a
 * running process the cache still holds what the previous session saw (the gap's messages are in it for
 * no channel), and it never learns a DM's newest message at all.
 */
export class SessionChannels {
  readonly #newest = new Map<string, string | null>();

  /** Records a GUILD_CREATE's channels (a payload of another shape records nothing). */
  sawGuild(payload: unknown): void {
    const parsed = GuildCreateSchema.safeParse(payload);
    if (!parsed.success) return;
    for (const channel of [...(parsed.data.channels ?? []), ...(parsed.data.threads ?? [])])
      this.#newest.set(channel.id, channel.last_message_id ?? null);
  }

  /**
   * Whether this session's guild create said the channel's newest message is not newer than the one the
   * hub took last: nothing to read back. A DM, or a channel this session was told nothing of, is read back.
   */
  nothingSince(mark: ChannelMark): boolean {
    const last = this.#newest.get(mark.channelId);
    return typeof last === "string" && /^\d+$/.test(last) && BigInt(last) <= BigInt(mark.after);
  }
}
