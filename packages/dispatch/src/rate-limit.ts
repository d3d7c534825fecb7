import { runScript, tokenBucketScript } from "@hub/queue";
import type { Redis } from "ioredis";

const TAKE = tokenBucketScript(new URL("./scripts/take.lua", import.meta.url));

/** One token bucket: its Redis key, at most `burst` tokens, refilled at `perMinute`. */
export interface TokenBucket {
  key: string;
  burst: number;
  perMinute: number;
}

/**
 * Token buckets in Redis, so a flood is bounded across every ingress process:
 * `burst` tokens at most, refilled at `perMinute`. The session's admission
 * script takes from the same buckets (same keys, same format) inside its one
 * atomic step; `take` is for what is not admitted into a session (commands).
 */
export class RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** The bucket named `bucket` (e.g. `sender:<channel>:<account>:<id>`). */
  bucket(bucket: string, burst: number, perMinute: number): TokenBucket {
    return { key: `${this.prefix}:tokens:${bucket}`, burst, perMinute };
  }

  /** Takes one token from each bucket in order, stopping at the first empty one; false when one is empty. */
  async take(buckets: TokenBucket[]): Promise<boolean> {
    for (const b of buckets) {
      const taken = await runScript(this.redis, TAKE, [b.key], [b.burst, b.perMinute / 60_000, Date.now()]);
      if (taken !== 1) return false;
    }
    return true;
  }

  /** True once per window per key: for "you are sending too fast" notices that must not flood back. */
  async once(key: string, windowMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.prefix}:rate-notice:${key}`, "1", "PX", windowMs, "NX")) === "OK";
  }
}
