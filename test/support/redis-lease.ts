import { ConnectionLease } from "@hub/core";
import { RedisLeaseStore } from "@hub/queue";
import type { Redis } from "ioredis";

/** A connection lease on `redis` at `key`, as the hub builds one for an account (closing it closes `redis` unless `owns` is false). */
export function redisLease(redis: Redis, key: string, ttlMs: number, owns = true): ConnectionLease {
  return new ConnectionLease(new RedisLeaseStore(redis, owns), key, ttlMs, true);
}
