import { accountConfigPath, type ChannelPlugin, HubError } from "@hub/core";
import { type DiscordConfig, DiscordConfigSchema } from "./config.js";

/**
 * The Discord channel plugin: `channels.discord` (or `channels.discord.accounts.<id>`),
 * `DISCORD_BOT_TOKEN` for the default account's token. discord.js is loaded only when an account is
 * built or checked.
 */
export const discordPlugin: ChannelPlugin<DiscordConfig> = {
  name: "discord",
  configSchema: DiscordConfigSchema,
  env: { DISCORD_BOT_TOKEN: "token" },
  secretKeys: ["token"],
  async diagnose(config, deps, { signal }) {
    const { diagnoseDiscord } = await import("./diagnose.js");
    return diagnoseDiscord(config, accountConfigPath("discord", deps.accountId), signal);
  },
  async create(config, deps) {
    if (!config.token) {
      throw new HubError(
        "discord_token_missing",
        `${accountConfigPath("discord", deps.accountId)} has no bot token; set its token or DISCORD_BOT_TOKEN (Developer Portal > your application > Bot > Reset Token).`,
      );
    }
    const { DiscordAdapter } = await import("./adapter.js");
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
