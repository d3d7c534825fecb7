import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { Redis } from "ioredis";

const HOLD = readFileSync(new URL("./scripts/lease-hold.lua", import.meta.url), "utf8");
const RELEASE = readFileSync(new URL("./scripts/lease-release.lua", import.meta.url), "utf8");

/** What the adapter needs of an account lease: take/renew it, know whether it still holds it, give it up. */
export interface AccountLease {
  /** Takes or renews the lease; `held: false` names the holder's token when another process has it. */
  hold(): Promise<{ held: boolean; holder: string }>;
  /** Whether the lease is surely still ours right now (renewed recently enough, by our own clock). */
  valid(): boolean;
  release(): Promise<void>;
  /** Releases the lease and closes what it holds (its Redis connection). */
  close?(): Promise<void>;
  /** How long one hold lasts (ms); the adapter renews it at a third of that. */
  readonly ttlMs: number;
}

/**
 * An account lease in Redis: one key per account holding the holder's token
 * (host, pid, random), set with a time limit and renewed while held. A process
 * that dies stops renewing, and another takes over once the time runs out.
 * `valid()` counts from before the renewal was sent, minus a margin, so a
 * process frozen past its lease knows it lost it before it sends anything.
 */
export class RedisAccountLease implements AccountLease {
  readonly token = `${hostname()}:${process.pid}:${randomUUID()}`;
  #validUntil = 0;

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    readonly ttlMs: number,
    private readonly ownsConnection = false,
  ) {}

  async hold(): Promise<{ held: boolean; holder: string }> {
    const sentAt = Date.now();
    const [held, holder] = (await this.redis.eval(HOLD, 1, this.key, this.token, String(this.ttlMs))) as [
      number,
      string,
    ];
    this.#validUntil = held === 1 ? sentAt + this.ttlMs - Math.min(1000, this.ttlMs / 10) : 0;
    return { held: held === 1, holder };
  }

  valid(): boolean {
    return Date.now() < this.#validUntil;
  }

  async release(): Promise<void> {
    this.#validUntil = 0;
    await this.redis.eval(RELEASE, 1, this.key, this.token);
  }

  async close(): Promise<void> {
    await this.release().catch(() => undefined);
    if (this.ownsConnection) this.redis.disconnect();
  }
}
