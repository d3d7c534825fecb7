import { randomInt } from "node:crypto";
import type { ReplyTarget } from "@hub/core";
import { scanKeys } from "@hub/queue";
import type { Redis } from "ioredis";
import { z } from "zod";

// No look-alikes (0/O, 1/I/L), so a code read aloud or on a phone is typed right.
const ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_TTL_MS = 3600_000;
/** Codes pending at once per channel account: large, so a few strangers can never starve the pool. */
export const MAX_PENDING = 100;
/** Codes one sender can get per day: strangers are limited one by one. */
export const MAX_CODES_PER_SENDER_PER_DAY = 3;
const DAY_SECONDS = 24 * 3600;

const PendingSchema = z.object({
  code: z.string(),
  senderId: z.string(),
  senderName: z.string().optional(),
  createdAt: z.number(),
  replyTarget: z.object({ channel: z.string(), accountId: z.string(), chatId: z.string() }).loose(),
});
/** A sender waiting for the owner to approve their pairing code. */
export type PendingPairing = z.infer<typeof PendingSchema> & { channel: string; accountId: string };

/**
 * What asking for a code gave: a new code, the one already pending, none
 * because the pool is full (`notify`: tell this sender to try later, once an
 * hour), or none because this sender already had their codes for the day.
 */
export type PairingRequest =
  | { kind: "new"; code: string }
  | { kind: "repeat"; code: string }
  | { kind: "full"; notify: boolean }
  | { kind: "limited" };

/** What an unknown sender is told (or undefined: nothing), under `unpairedResponse: "code"`. */
export function pairingNotice(request: PairingRequest, response: "code" | "silent"): string | undefined {
  if (response !== "code") return undefined;
  if (request.kind === "new")
    return `Hi! I only answer people my owner has approved. Your pairing code is ${request.code} (valid for 1 hour); send it to the owner to be let in.`;
  if (request.kind === "full" && request.notify)
    return "Hi! I only answer people my owner has approved, and too many requests are waiting right now. Please try again in an hour.";
  return undefined;
}

/**
 * Owner-approved pairing of DM senders, per channel account, in Redis: a code
 * per unknown sender (8 characters, valid 1 hour, at most 3 per sender a day,
 * at most 100 pending per account), and the set of approved senders. Approval
 * grants DMs only. Senders turned away because the pool was full are counted,
 * so the owner sees a flood.
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
    const account = `${ctx.channel}:${ctx.accountId}`;
    if (live.length >= MAX_PENDING) {
      await this.redis.multi().incr(this.#turnedAway(account)).expire(this.#turnedAway(account), 3600).exec();
      const first = await this.redis.set(
        `${this.prefix}:pairing:busy:${account}:${ctx.senderId}`,
        "1",
        "EX",
        3600,
        "NX",
      );
      return { kind: "full", notify: first === "OK" };
    }
    const asked = `${this.prefix}:pairing:asked:${account}:${ctx.senderId}`;
    const [[, count] = []] =
      (await this.redis.multi().incr(asked).expire(asked, DAY_SECONDS, "NX").exec()) ?? [];
    if (Number(count) > MAX_CODES_PER_SENDER_PER_DAY) return { kind: "limited" };
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

  #turnedAway(account: string): string {
    return `${this.prefix}:pairing:turned-away:${account}`;
  }

  /** How many unknown senders got no code in the last hour because the pool was full, per `channel:accountId`. */
  async turnedAway(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    const base = `${this.prefix}:pairing:turned-away:`;
    for (const key of await scanKeys(this.redis, `${base}*`))
      out[key.slice(base.length)] = Number((await this.redis.get(key)) ?? 0);
    return out;
  }

  /** Every live pending pairing. */
  async list(): Promise<PendingPairing[]> {
    const out: PendingPairing[] = [];
    const base = `${this.prefix}:pairing:pending:`;
    for (const key of await scanKeys(this.redis, `${base}*`)) {
      const [channel = "", accountId = ""] = key.slice(base.length).split(":");
      for (const p of await this.#live(channel, accountId)) out.push({ ...p, channel, accountId });
    }
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

  /** Denies a code: the request is dropped and the sender stays out (they are not told). Returns it, if the code was live. */
  async deny(channel: string, code: string): Promise<PendingPairing | undefined> {
    const found = (await this.list()).find((p) => p.channel === channel && p.code === code.toUpperCase());
    if (!found) return undefined;
    await this.redis.hdel(this.#pending(channel, found.accountId), found.senderId);
    return found;
  }
}
