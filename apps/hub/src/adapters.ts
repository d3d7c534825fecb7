import type { AdapterStateStore, ChannelAdapter, HubConfig, HubLogger } from "@hub/core";
import { HubError } from "@hub/core";
import { TelegramAdapter } from "@hub/telegram";
import type { Redis } from "ioredis";

/** Adapter state in Redis, so any process of the ingress role resumes where another stopped. */
export function redisStateStore(redis: Redis, prefix: string): AdapterStateStore {
  return {
    get: async (key) => (await redis.get(`${prefix}:adapter:${key}`)) ?? undefined,
    set: async (key, value) => void (await redis.set(`${prefix}:adapter:${key}`, value)),
  };
}

/** Builds the configured channel adapters (not started). The web chat is built by the hub itself. */
export function buildChannelAdapters(
  config: HubConfig,
  deps: { redis: Redis; prefix: string; logger: HubLogger },
): ChannelAdapter[] {
  const adapters: ChannelAdapter[] = [];
  const telegram = config.channels.telegram;
  if (telegram?.enabled) {
    if (!telegram.botToken) {
      throw new HubError(
        "telegram_token_missing",
        "channels.telegram is configured without a bot token; set channels.telegram.botToken or TELEGRAM_BOT_TOKEN (from @BotFather).",
      );
    }
    adapters.push(
      new TelegramAdapter({
        botToken: telegram.botToken,
        apiRoot: telegram.apiRoot,
        accountId: telegram.accountId,
        mode: telegram.mode,
        ...(telegram.webhookUrl ? { webhookUrl: telegram.webhookUrl } : {}),
        ...(telegram.webhookSecret ? { webhookSecret: telegram.webhookSecret } : {}),
        channelPosts: telegram.channelPosts,
        editedMessages: telegram.editedMessages,
        state: redisStateStore(deps.redis, deps.prefix),
        logger: deps.logger,
      }),
    );
  }
  return adapters;
}
