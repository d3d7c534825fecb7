import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";

/** Our Redis client type (ioredis). */
export type RedisClient = Redis;

/**
 * Opens a Redis connection. `maxRetriesPerRequest: null` because BullMQ's
 * blocking connections require it, and a command should wait out a Redis
 * restart rather than fail a run. Commands issued in one event-loop turn go
 * out in one socket write (ioredis auto-pipelining): under load, many runs'
 * steps share a round trip and a syscall instead of paying one each.
 */
export function createRedis(url: string, options: { lazy?: boolean } = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    lazyConnect: options.lazy ?? false,
    enableAutoPipelining: true,
  });
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

const shas = new Map<string, string>();

/**
 * Runs a Lua script by its SHA (EVALSHA), loading it on first use or after a
 * Redis restart (NOSCRIPT), so hot paths do not resend the script text.
 */
export async function runScript(
  redis: Redis,
  script: string,
  keys: Array<string>,
  args: Array<string | number>,
): Promise<unknown> {
  let sha = shas.get(script);
  if (!sha) {
    sha = createHash("sha1").update(script).digest("hex");
    shas.set(script, sha);
  }
  try {
    return await redis.evalsha(sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (error instanceof Error && error.message.startsWith("NOSCRIPT"))
      return redis.eval(script, keys.length, ...keys, ...args);
    throw error;
  }
}

/** Reads a Lua script kept in its own file (one script per file, header naming KEYS, ARGV and result). */
export function loadScript(url: URL): string {
  return readFileSync(fileURLToPath(url), "utf8");
}

/** A script that takes flood-limit tokens: the shared `take_token` Lua function (commands/token-bucket.lua), then the script. */
export function tokenBucketScript(url: URL): string {
  return `${loadScript(new URL("./commands/token-bucket.lua", import.meta.url))}\n${loadScript(url)}`;
}
