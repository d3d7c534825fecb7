import type { ChannelPlugin } from "@hub/core";
import { Redis } from "ioredis";
import { WhatsAppAdapter } from "./adapter.js";
import { type WhatsAppConfig, WhatsAppConfigSchema } from "./config.js";
import { RedisAccountLease } from "./lease.js";
import { authDirOf, baileysConnector } from "./socket.js";

/** The Redis key of an account's lease (one hub process holds its socket). */
export function leaseKey(prefix: string, accountId: string): string {
  return `${prefix}:whatsapp:lease:${accountId}`;
}

/**
 * WhatsApp as a channel plugin: `channels.whatsapp` (or `.accounts.<id>`)
 * builds one linked device per account, its credentials in the state
 * directory (`whatsapp/<accountId>` unless `authDir` says otherwise) and its
 * socket held by one hub process at a time through a lease in the hub's Redis.
 */
export const whatsappPlugin: ChannelPlugin<WhatsAppConfig> = {
  name: "whatsapp",
  configSchema: WhatsAppConfigSchema,
  env: { WHATSAPP_AUTH_DIR: "authDir" },
  create(config, deps) {
    const logger = deps.logger;
    const authDir = authDirOf(deps.stateDir, deps.accountId, config.authDir);
    const lease = deps.redis
      ? new RedisAccountLease(
          new Redis(deps.redis.url, { maxRetriesPerRequest: 2, lazyConnect: true }),
          leaseKey(deps.redis.prefix, deps.accountId),
          config.leaseMs,
          true,
        )
      : undefined;
    return new WhatsAppAdapter({
      accountId: deps.accountId,
      connector: baileysConnector({ authDir, logger }),
      logger,
      ...(lease ? { lease } : {}),
      textLimit: config.textLimit,
      maxMessageAgeMs: config.maxMessageAgeMs,
      sendIntervalMs: config.sendIntervalMs,
      groupSendIntervalMs: config.groupSendIntervalMs,
      presence: config.presence,
      reconnect: { initialMs: config.reconnectInitialMs, maxMs: config.reconnectMaxMs },
    });
  },
};
