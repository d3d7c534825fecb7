import type { LeaseStore } from "@hub/core";
import type { Redis } from "ioredis";
import { createRedis, loadScript, runScript } from "../redis.js";

const HOLD = loadScript(new URL("./hold.lua", import.meta.url));
const RELEASE = loadScript(new URL("./release.lua", import.meta.url));

/**
 * Connection leases in Redis (one string key per lease, holding the holder's
 * token with a time limit). Its connection gives up a command after a couple of
 * retries rather than waiting out an outage: a holder must learn quickly that
 * it cannot renew, and its own clock ends the lease then.
 */
export class RedisLeaseStore implements LeaseStore {
  constructor(
    private readonly redis: Redis,
    private readonly ownsConnection = false,
  ) {}

  /** A store on its own connection to `url`, closed with the store. */
  static connect(url: string, onError: (error: unknown) => void = () => {}): RedisLeaseStore {
    const redis = createRedis(url, { lazy: true, maxRetriesPerRequest: 2, connectTimeoutMs: 3000 });
    redis.on("error", onError);
    return new RedisLeaseStore(redis, true);
  }

  async hold(key: string, token: string, ttlMs: number): Promise<{ held: boolean; holder: string }> {
    const [held, holder] = (await runScript(this.redis, HOLD, [key], [token, ttlMs])) as [number, string];
    return { held: held === 1, holder };
  }

  async release(key: string, token: string): Promise<void> {
    await runScript(this.redis, RELEASE, [key], [token]);
  }

  async close(): Promise<void> {
    if (this.ownsConnection) this.redis.disconnect();
  }
}
