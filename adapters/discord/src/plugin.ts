import { type ChannelPlugin, HubError } from "@hub/core";
import { DiscordAdapter } from "./adapter.js";
import { type DiscordConfig, DiscordConfigSchema } from "./config.js";

/**
 * The Discord channel plugin: `channels.discord` (or `channels.discord.accounts.<id>`),
 * `DISCORD_BOT_TOKEN` for the default account's token.
 */
export const discordPlugin: ChannelPlugin<DiscordConfig> = {
  name: "discord",
  configSchema: DiscordConfigSchema,
  env: { DISCORD_BOT_TOKEN: "token" },
  secretKeys: ["token"],
  create(config, deps) {
    if (!config.token) {
      throw new HubError(
        "discord_token_missing",
        `channels.discord${deps.accountId === "default" ? "" : `.accounts.${deps.accountId}`} has no bot token; set its token or DISCORD_BOT_TOKEN (Developer Portal > your application > Bot > Reset Token).`,
      );
    }
    return new DiscordAdapter({
      token: config.token,
      restApi: config.restApi,
      accountId: deps.accountId,
      guilds: config.guilds,
      textLimit: config.textLimit,
      maxLinesPerMessage: config.maxLinesPerMessage,
      slashCommands: config.slashCommands,
      state: deps.state,
      logger: deps.logger,
      ...(deps.lease ? { lease: deps.lease(config.leaseMs) } : {}),
    });
  },
};
