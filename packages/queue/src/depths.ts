import type { Redis } from "ioredis";
import { scanKeys } from "./redis.js";

/** Items waiting per mailbox kind (`<prefix>:mb:<name>:q:<key>` lists), summed over keys. */
export async function queueDepths(redis: Redis, prefix: string): Promise<Record<string, number>> {
  const depths: Record<string, number> = { reply: 0, runs: 0 };
  const base = `${prefix}:mb:`;
  for (const key of await scanKeys(redis, `${base}*:q:*`)) {
    const name = key.slice(base.length).split(":q:")[0] as string;
    // Not a list of items: e.g. a group's record whose name happens to hold ":q:".
    if (name.includes(":")) continue;
    depths[name] = (depths[name] ?? 0) + (await redis.llen(key));
  }
  return depths;
}
