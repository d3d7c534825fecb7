import type { AdapterStateStore } from "@hub/core";
import { sleep, usableWaitMs } from "@hub/core";
import { RateLimitError, type REST, Routes } from "discord.js";
import { z } from "zod";

// Discord's gateway sends a message once, to the connection that is up: a hub that was down (a crash, a
// restart, a standby taking over) and identifies again never gets what was written meanwhile. The
// adapter remembers, per channel, the newest message it handed to the hub, and after every fresh
// READY reads back through REST what came after it (GET /channels/{id}/messages?after=).

/** How far back a catch-up reads: a message older than this when the hub comes back is not answered. */
export const CATCH_UP_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Live messages wait at most this long for the catch-up (their order behind the missed ones). */
export const CATCH_UP_BUDGET_MS = 10_000;
/**
 * A channel whose newest message the hub took is older than this leaves the read-back index: a new
 * session asks about channels active in the last week, not about every channel the bot ever heard from.
 */
export const CHANNEL_IDLE_MS = 7 * 24 * 60 * 60 * 1000;
/** At most this many channels are read back after one READY, the most recently active first. */
export const MAX_CHANNELS = 500;
/** At most this many pages of 100 messages are read back per channel. */
const MAX_PAGES = 5;
const PAGE = 100;
const DISCORD_EPOCH = 1_420_070_400_000n;

/** The smallest snowflake of a moment (epoch ms): `after` it means "written since then". */
export function snowflakeAt(ms: number): string {
  return String((BigInt(Math.max(ms, Number(DISCORD_EPOCH))) - DISCORD_EPOCH) << 22n);
}

const isNewer = (a: string, b: string): boolean => BigInt(a) > BigInt(b);

/** When a snowflake was made (epoch ms). */
export const snowflakeTime = (id: string): number => Number((BigInt(id) >> 22n) + DISCORD_EPOCH);

/** How far ahead of this machine's clock Discord's may be: an id made later than that was not made by Discord. */
const CLOCK_SKEW_MS = 10 * 60 * 1000;

const fromTheFuture = (id: string, now: number): boolean => snowflakeTime(id) > now + CLOCK_SKEW_MS;

/** The channels the hub has taken messages from: channel id -> its guild id (null: a DM). */
const IndexSchema = z.record(z.string(), z.string().nullable());

/** One channel to read back: messages after `after`. */
export interface ChannelMark {
  channelId: string;
  guildId: string | undefined;
  after: string;
}

/**
 * Per channel, the newest message handed to the hub (`discord:<account>:last:<channel>`), and the
 * index of those channels (`discord:<account>:channels`), in the hub's shared state, so the process
 * that holds the gateway next (this one restarted, or a standby) knows where to read back from.
 */
export class ChannelMarks {
  #index = new Map<string, string | null>();
  readonly #last = new Map<string, string>();
  /** The channels heard from while `load` reads the index: the index it reads may predate them. */
  #heardDuringLoad: Map<string, string | null> | undefined;

  constructor(
    private readonly state: AdapterStateStore,
    private readonly accountId: string,
  ) {}

  #key(what: string): string {
    return `discord:${this.accountId}:${what}`;
  }

  /** Whether the hub took a message from the channel (so it is read back after a new session). */
  knows(channelId: string): boolean {
    return this.#index.has(channelId);
  }

  /**
   * Records that the hub took `messageId` (or decided it was not for it); never moves a mark back, nor to an
   * id made in the future (a forged one would hold every later read-back of the channel past its messages).
   */
  async remember(channelId: string, guildId: string | undefined, messageId: string): Promise<void> {
    if (fromTheFuture(messageId, Date.now())) return;
    const known = this.#last.get(channelId);
    if (known !== undefined && !isNewer(messageId, known)) return;
    this.#last.set(channelId, messageId);
    this.#heardDuringLoad?.set(channelId, guildId ?? null);
    await this.state.set(this.#key(`last:${channelId}`), messageId);
    if (this.#index.has(channelId)) return;
    this.#index.set(channelId, guildId ?? null);
    await this.#writeIndex();
  }

  /**
   * Reads the index and marks again (another process may have held the gateway meanwhile): the channels
   * active within CHANNEL_IDLE_MS, most recently active first. Idler channels, and channels without a
   * readable mark (or with one from the future), leave the index, and their marks are deleted (else one key per channel ever heard
   * from would stay forever).
   */
  async load(now = Date.now()): Promise<ChannelMark[]> {
    const heard = await this.#readIndex();
    const channels = [...this.#index];
    const values = await this.#readMarks(channels.map(([channelId]) => channelId));
    const marks: ChannelMark[] = [];
    const gone: string[] = [];
    channels.forEach(([channelId, guildId], i) => {
      const last = values[i];
      if (
        !last ||
        !/^\d+$/.test(last) ||
        snowflakeTime(last) < now - CHANNEL_IDLE_MS ||
        fromTheFuture(last, now)
      ) {
        gone.push(channelId);
        return;
      }
      const known = this.#last.get(channelId);
      if (known === undefined || isNewer(last, known)) this.#last.set(channelId, last);
      marks.push({ channelId, guildId: guildId ?? undefined, after: last });
    });
    if (gone.length > 0) await this.#forget(gone);
    else if (heard > 0) await this.#writeIndex();
    return marks.sort((a, b) => (isNewer(a.after, b.after) ? -1 : 1));
  }

  /**
   * Replaces the index with the stored one, plus the channels heard from while it was read (their own
   * write of the index may have come before the read, or after it: either way they stay). Returns how many
   * of those the stored index lacked (it is written again then).
   */
  async #readIndex(): Promise<number> {
    const heard = new Map<string, string | null>();
    this.#heardDuringLoad = heard;
    let raw: string | undefined;
    try {
      raw = await this.state.get(this.#key("channels"));
    } finally {
      this.#heardDuringLoad = undefined;
    }
    const parsed = IndexSchema.safeParse(parsedJson(raw));
    this.#index = new Map(Object.entries(parsed.success ? parsed.data : {}));
    let missing = 0;
    for (const [channelId, guildId] of heard) {
      if (this.#index.has(channelId)) continue;
      this.#index.set(channelId, guildId);
      missing++;
    }
    return missing;
  }

  #writeIndex(): Promise<void> {
    return this.state.set(this.#key("channels"), JSON.stringify(Object.fromEntries(this.#index)));
  }

  /** The channels' marks in the order asked: in one round trip when the store can, else one by one. */
  async #readMarks(channels: string[]): Promise<Array<string | undefined>> {
    const keys = channels.map((channelId) => this.#key(`last:${channelId}`));
    if (this.state.getMany) return this.state.getMany(keys);
    const values: Array<string | undefined> = [];
    for (const key of keys) values.push(await this.state.get(key));
    return values;
  }

  /** Takes channels out of the index, then deletes their marks (a mark left behind is only a stray key). */
  async #forget(channels: string[]): Promise<void> {
    for (const channelId of channels) this.#index.delete(channelId);
    await this.#writeIndex();
    await this.state.delete?.(channels.map((channelId) => this.#key(`last:${channelId}`)));
  }
}

/** A stored JSON value, or {} when absent or unreadable (a torn index is rebuilt as channels are heard from). */
function parsedJson(raw: string | undefined): unknown {
  if (!raw) return {};
  try {
    return JSON.parse(raw);
  } catch {
    return {};
  }
}

/**
 * The channels one read-back asks about, from `load`'s marks (most recently active first): those that
 * may have missed messages (`quiet`: the channel had none since its mark), at most MAX_CHANNELS of them.
 * `skipped` counts the ones left out for the limit.
 */
export function channelsToRead(
  marks: ChannelMark[],
  quiet: (mark: ChannelMark) => boolean,
): { read: ChannelMark[]; skipped: number } {
  const candidates = marks.filter((mark) => !quiet(mark));
  return { read: candidates.slice(0, MAX_CHANNELS), skipped: Math.max(0, candidates.length - MAX_CHANNELS) };
}

const PageSchema = z.array(z.looseObject({ id: z.string().regex(/^\d+$/) }));
type Listed = z.infer<typeof PageSchema>[number];

/** One page of a channel's messages after `after`, oldest first; a 429 is waited out once. */
async function page(rest: REST, channelId: string, after: string): Promise<Listed[]> {
  const query = new URLSearchParams({ after, limit: String(PAGE) });
  const get = () => rest.get(Routes.channelMessages(channelId), { query });
  const answer = await get().catch(async (error: unknown) => {
    if (!(error instanceof RateLimitError)) throw error;
    await sleep(usableWaitMs(Math.max(error.retryAfter, error.timeToReset, 1)));
    return get();
  });
  return PageSchema.parse(answer).sort((a, b) => (isNewer(a.id, b.id) ? 1 : -1));
}

/** The messages of a channel after `after` (at most MAX_PAGES pages), oldest first. */
export async function missedMessages(rest: REST, channelId: string, after: string): Promise<Listed[]> {
  const found: Listed[] = [];
  let cursor = after;
  for (let n = 0; n < MAX_PAGES; n++) {
    const batch = await page(rest, channelId, cursor);
    found.push(...batch);
    const last = batch.at(-1);
    if (batch.length < PAGE || !last) break;
    cursor = last.id;
  }
  return found;
}
