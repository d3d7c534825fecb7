import {
  type AccountLease,
  type AdapterStateStore,
  type ChannelAdapter,
  type ChannelPlugin,
  ConnectionLease,
  connectionLeaseKey,
  describeError,
  type HubConfig,
  HubError,
  type HubLogger,
  WEBCHAT_CHANNEL,
} from "@hub/core";
import { RedisLeaseStore } from "@hub/queue";
import type { Redis } from "ioredis";
import { unbuiltAdapter } from "./unbuilt-adapter.js";

/** Adapter state in Redis, so any process of the ingress role resumes where another stopped. */
export function redisStateStore(redis: Redis, prefix: string): AdapterStateStore {
  const full = (key: string) => `${prefix}:adapter:${key}`;
  // MGET and DEL of many keys are single commands: on a Redis Cluster all their keys must hash to one
  // slot, and they do, as the hub's prefix always carries a hash tag (`hashTaggedPrefix`).
  return {
    get: async (key) => (await redis.get(full(key))) ?? undefined,
    set: async (key, value) => void (await redis.set(full(key), value)),
    // Redis refuses an MGET or DEL without keys.
    getMany: async (keys) =>
      keys.length === 0 ? [] : (await redis.mget(keys.map(full))).map((value) => value ?? undefined),
    delete: async (keys) => void (keys.length > 0 && (await redis.del(keys.map(full)))),
  };
}

/** The lease of one channel account's single-holder connection, on its own Redis connection. */
export function channelLease(
  redis: { url: string; prefix: string },
  channel: string,
  accountId: string,
  logger: HubLogger,
): (ttlMs: number) => AccountLease {
  const key = connectionLeaseKey(redis.prefix, channel, accountId);
  return (ttlMs) => {
    // A failed command reports the error (the channel's status says the lease is unavailable); the events only repeat it.
    const store = RedisLeaseStore.connect(redis.url, (error) =>
      logger.debug({ err: describeError(error) }, "connection lease redis error"),
    );
    return new ConnectionLease(store, key, ttlMs, true);
  };
}

/**
 * Builds one adapter per enabled account of every configured channel (not
 * started), each by its channel's plugin (which loads its platform SDK then).
 * An account whose config its plugin refuses gets a stand-in that starts as
 * `failed` with the plugin's sentence. The web chat is built by the hub itself.
 */
export async function buildChannelAdapters(
  config: HubConfig,
  plugins: ReadonlyArray<ChannelPlugin>,
  deps: { redis: Redis; prefix: string; logger: HubLogger; stateDir: string },
): Promise<ChannelAdapter[]> {
  const adapters: ChannelAdapter[] = [];
  for (const [name, section] of Object.entries(config.channels)) {
    if (name === WEBCHAT_CHANNEL.name) continue;
    const plugin = plugins.find((p) => p.name === name);
    if (!plugin) {
      throw new HubError(
        "channel_unknown",
        `channels.${name} has no installed plugin (installed: ${plugins.map((p) => p.name).join(", ")}); remove it or install its plugin.`,
      );
    }
    for (const [accountId, account] of Object.entries(section.accounts)) {
      if (!account.enabled) continue;
      const built = plugin.create(account, {
        accountId,
        logger: deps.logger,
        state: redisStateStore(deps.redis, deps.prefix),
        stateDir: deps.stateDir,
        redis: { url: config.redis.url, prefix: deps.prefix },
        lease: channelLease({ url: config.redis.url, prefix: deps.prefix }, name, accountId, deps.logger),
      });
      // A config the plugin refuses (a missing token) fails this account only, like a refused token.
      adapters.push(
        await built.catch((error: unknown) => {
          if (error instanceof HubError) return unbuiltAdapter(name, accountId, error);
          throw error;
        }),
      );
    }
  }
  return adapters;
}
