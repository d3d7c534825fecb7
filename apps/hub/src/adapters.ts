import {
  type AdapterStateStore,
  type ChannelAdapter,
  type ChannelPlugin,
  type HubConfig,
  HubError,
  type HubLogger,
  WEBCHAT_CHANNEL,
} from "@hub/core";
import type { Redis } from "ioredis";

/** Adapter state in Redis, so any process of the ingress role resumes where another stopped. */
export function redisStateStore(redis: Redis, prefix: string): AdapterStateStore {
  return {
    get: async (key) => (await redis.get(`${prefix}:adapter:${key}`)) ?? undefined,
    set: async (key, value) => void (await redis.set(`${prefix}:adapter:${key}`, value)),
  };
}

/**
 * Builds one adapter per enabled account of every configured channel (not
 * started), each by its channel's plugin. The web chat is built by the hub itself.
 */
export function buildChannelAdapters(
  config: HubConfig,
  plugins: ReadonlyArray<ChannelPlugin>,
  deps: { redis: Redis; prefix: string; logger: HubLogger; stateDir: string },
): ChannelAdapter[] {
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
      adapters.push(
        plugin.create(account, {
          accountId,
          logger: deps.logger,
          state: redisStateStore(deps.redis, deps.prefix),
          stateDir: deps.stateDir,
          redis: { url: config.redis.url, prefix: deps.prefix },
        }),
      );
    }
  }
  return adapters;
}
