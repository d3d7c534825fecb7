import { randomInt } from "node:crypto";
import type { ReplyTarget } from "@hub/core";
import type { Redis } from "ioredis";
import { z } from "zod";

// No look-alikes (0/O, 1/I/L), so a code read aloud or on a phone is typed right.
const ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_TTL_MS = 3600_000;
const MAX_PENDING = 3;

const PendingSchema = z.object({
  code: z.string(),
  senderId: z.string(),
  senderName: z.string().optional(),
  createdAt: z.number(),
  replyTarget: z.object({ channel: z.string(), accountId: z.string(), chatId: z.string() }).loose(),
});
/** A sender waiting for the owner to approve their pairing code. */
export type PendingPairing = z.infer<typeof PendingSchema> & { channel: string; accountId: string };

/** What asking for a code gave. */
export type PairingRequest =
  | { kind: "new"; code: string }
  | { kind: "repeat"; code: string }
  | { kind: "full" };

/**
 * Owner-approved pairing of DM senders, per channel account, in Redis: a code
 * per unknown sender (8 characters, valid 1 hour, at most 3 pending per
 * account), and the set of approved senders. Approval grants DMs only.
 */
export class PairingStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  #pending(channel: string, accountId: string): string {
    return `${this.prefix}:pairing:pending:${channel}:${accountId}`;
  }

  #approved(channel: string, accountId: string): string {
    return `${this.prefix}:pairing:approved:${channel}:${accountId}`;
  }

  async isApproved(channel: string, accountId: string, senderId: string): Promise<boolean> {
    return (await this.redis.sismember(this.#approved(channel, accountId), senderId)) === 1;
  }

  async #live(channel: string, accountId: string): Promise<Array<z.infer<typeof PendingSchema>>> {
    const all = await this.redis.hgetall(this.#pending(channel, accountId));
    const now = Date.now();
    const live: Array<z.infer<typeof PendingSchema>> = [];
    for (const [senderId, raw] of Object.entries(all)) {
      const p = PendingSchema.safeParse(JSON.parse(raw));
      if (p.success && now - p.data.createdAt < CODE_TTL_MS) live.push(p.data);
      else await this.redis.hdel(this.#pending(channel, accountId), senderId);
    }
    return live;
  }

  /** A code for an unknown sender: a new one, the one already pending (no new message), or none when too many wait. */
  async request(ctx: {
    channel: string;
    accountId: string;
    senderId: string;
    senderName?: string | undefined;
    replyTarget: ReplyTarget;
  }): Promise<PairingRequest> {
    const live = await this.#live(ctx.channel, ctx.accountId);
    const mine = live.find((p) => p.senderId === ctx.senderId);
    if (mine) return { kind: "repeat", code: mine.code };
    if (live.length >= MAX_PENDING) return { kind: "full" };
    const code = Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");
    const { replyToMessageId: _drop, ...target } = ctx.replyTarget;
    const pending = {
      code,
      senderId: ctx.senderId,
      ...(ctx.senderName ? { senderName: ctx.senderName } : {}),
      createdAt: Date.now(),
      replyTarget: target,
    };
    // HSETNX: two messages of one stranger at once still get one code.
    const created = await this.redis.hsetnx(
      this.#pending(ctx.channel, ctx.accountId),
      ctx.senderId,
      JSON.stringify(pending),
    );
    await this.redis.pexpire(this.#pending(ctx.channel, ctx.accountId), CODE_TTL_MS);
    if (!created) return this.request(ctx);
    return { kind: "new", code };
  }

  /** Every live pending pairing. */
  async list(): Promise<PendingPairing[]> {
    const out: PendingPairing[] = [];
    let cursor = "0";
    do {
      const [next, keys] = await this.redis.scan(
        cursor,
        "MATCH",
        `${this.prefix}:pairing:pending:*`,
        "COUNT",
        100,
      );
      cursor = next;
      for (const key of keys) {
        const [channel = "", accountId = ""] = key.slice(`${this.prefix}:pairing:pending:`.length).split(":");
        for (const p of await this.#live(channel, accountId)) out.push({ ...p, channel, accountId });
      }
    } while (cursor !== "0");
    return out;
  }

  /** Approves a code: the sender joins the channel's DM allowlist. Returns the approved pairing, if the code was live. */
  async approve(channel: string, code: string): Promise<PendingPairing | undefined> {
    const found = (await this.list()).find((p) => p.channel === channel && p.code === code.toUpperCase());
    if (!found) return undefined;
    await this.redis
      .multi()
      .sadd(this.#approved(channel, found.accountId), found.senderId)
      .hdel(this.#pending(channel, found.accountId), found.senderId)
      .exec();
    return found;
  }
}
