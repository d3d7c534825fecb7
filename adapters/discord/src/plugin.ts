import { accountConfigPath, type ChannelPlugin, HubError, keyOrVariable } from "@hub/core";
import { type DiscordConfig, DiscordConfigSchema } from "./config.js";

// A sentence naming the key to set (`create` refuses with it; `hub config validate` lists it).
const tokenMissing = (accountId: string) => {
  const path = accountConfigPath("discord", accountId);
  return new HubError(
    "discord_token_missing",
    `${path} has no bot token; set ${keyOrVariable(path, "token", "DISCORD_BOT_TOKEN")} (Developer Portal > your application > Bot > Reset Token).`,
  );
};

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
  configProblems: (config, accountId) => (config.token ? [] : [tokenMissing(accountId)]),
  async create(config, deps) {
    if (!config.token) throw tokenMissing(deps.accountId);
    const { DiscordAdapter } = await import("./adapter.js");
    return new DiscordAdapter({
      token: config.token,
      restApi: config.restApi,
      accountId: deps.accountId,
      guilds: config.guilds,
      textLimit: config.textLimit,
      maxLinesPerMessage: config.maxLinesPerMessage,
      slashCommands: config.slashCommands,
      ...(config.pacing ? { pacing: config.pacing } : {}),
      state: deps.state,
      logger: deps.logger,
      ...(deps.lease ? { lease: deps.lease(config.leaseMs) } : {}),
    });
  },
};
