import { accountConfigPath, type ChannelPlugin, HubError } from "@hub/core";
import { DiscordAdapter } from "./adapter.js";
import { type DiscordConfig, DiscordConfigSchema } from "./config.js";
import { diagnoseDiscord } from "./diagnose.js";

/**
 * The Discord channel plugin: `channels.discord` (or `channels.discord.accounts.<id>`),
 * `DISCORD_BOT_TOKEN` for the default account's token.
 */
export const discordPlugin: ChannelPlugin<DiscordConfig> = {
  name: "discord",
  configSchema: DiscordConfigSchema,
  env: { DISCORD_BOT_TOKEN: "token" },
  secretKeys: ["token"],
  diagnose: (config, deps, { signal }) =>
    diagnoseDiscord(config, accountConfigPath("discord", deps.accountId), signal),
  create(config, deps) {
    if (!config.token) {
      throw new HubError(
        "discord_token_missing",
        `${accountConfigPath("discord", deps.accountId)} has no bot token; set its token or DISCORD_BOT_TOKEN (Developer Portal > your application > Bot > Reset Token).`,
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
