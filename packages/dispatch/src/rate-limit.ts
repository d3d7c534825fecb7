import type { Redis } from "ioredis";

// take(bucket; capacity, refillPerMs, now) -> 1 if a token was taken. State: tokens and last refill time.
const TAKE = `
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - at) * rate)
local ok = 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
end
redis.call('HSET', KEYS[1], 't', tokens, 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate) + 1000)
return ok
`;

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
    const result = await this.redis.eval(
      TAKE,
      1,
      `${this.prefix}:rate:${bucket}`,
      burst,
      perMinute / 60_000,
      Date.now(),
    );
    return result === 1;
  }

  /** True once per window per key: for "you are sending too fast" notices that must not flood back. */
  async once(key: string, windowMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.prefix}:rate-notice:${key}`, "1", "PX", windowMs, "NX")) === "OK";
  }
}
