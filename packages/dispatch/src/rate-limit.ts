import { loadScript, runScript } from "@hub/queue";
import type { Redis } from "ioredis";

const TAKE = loadScript(new URL("./scripts/take.lua", import.meta.url));

/**
 * Token buckets in Redis, so a flood is bounded across every ingress process:
 * `burst` tokens at most, refilled at `perMinute`.
 */
export class RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** Takes one token from a bucket; false when it is empty. */
  async take(bucket: string, burst: number, perMinute: number): Promise<boolean> {
    const key = `${this.prefix}:rate:${bucket}`;
    return (await runScript(this.redis, TAKE, [key], [burst, perMinute / 60_000, Date.now()])) === 1;
  }

  /** True once per window per key: for "you are sending too fast" notices that must not flood back. */
  async once(key: string, windowMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.prefix}:rate-notice:${key}`, "1", "PX", windowMs, "NX")) === "OK";
  }
}
