import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";

/** The Redis every test talks to (a real one; `.ci/run` starts it if needed). */
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * A key prefix no other test uses, so tests can run in parallel against one Redis. It carries
 * its hash tag already (as the hub's config gives every prefix), so keys a test builds from it
 * are the hub's keys.
 */
export function testPrefix(name: string): string {
  return `{t-${name}-${randomUUID().slice(0, 8)}}`;
}

/** Deletes every key under a prefix (call in afterAll/afterEach). */
export async function dropPrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

/** Polls `check` until it returns true or `timeoutMs` passes (then throws with `what`). */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
