import type { Redis } from "ioredis";

/** Items waiting per mailbox kind (`<prefix>:mb:<name>:q:<key>` lists), summed over keys. */
export async function queueDepths(redis: Redis, prefix: string): Promise<Record<string, number>> {
  const depths: Record<string, number> = { reply: 0, runs: 0 };
  const base = `${prefix}:mb:`;
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${base}*:q:*`, "COUNT", 500);
    cursor = next;
    for (const key of keys) {
      const name = key.slice(base.length).split(":q:")[0] as string;
      depths[name] = (depths[name] ?? 0) + (await redis.llen(key));
    }
  } while (cursor !== "0");
  return depths;
}
