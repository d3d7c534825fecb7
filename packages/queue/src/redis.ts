import { Redis } from "ioredis";

/** Our Redis client type (ioredis). */
export type RedisClient = Redis;

/**
 * Opens a Redis connection. `maxRetriesPerRequest: null` because BullMQ's
 * blocking connections require it, and a command should wait out a Redis
 * restart rather than fail a run.
 */
export function createRedis(url: string, options: { lazy?: boolean } = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, lazyConnect: options.lazy ?? false });
}

/** Resolves when Redis answers PING within `timeoutMs`, or rejects with a clear error. */
export async function pingRedis(url: string, timeoutMs = 1500): Promise<void> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.ping();
  } finally {
    client.disconnect();
  }
}
