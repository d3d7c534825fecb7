import { accountConfigPath, type ChannelPlugin, HubError, keyOrVariable } from "@hub/core";
import { type TelegramConfig, TelegramConfigSchema } from "./config.js";
import { webhookProblems } from "./webhook-settings.js";

// A sentence naming the key to set (`create` refuses with it; `hub config validate` lists it).
const tokenMissing = (accountId: string) => {
  const at = accountConfigPath("telegram", accountId);
  return new HubError(
    "telegram_token_missing",
    `${at} is configured without a bot token; set ${keyOrVariable(at, "botToken", "TELEGRAM_BOT_TOKEN")} (from @BotFather).`,
  );
};

/**
 * Telegram as a channel plugin: `channels.telegram` (or `.accounts.<id>`) builds one grammY bot per account.
 * grammY is loaded only when an account is built or checked.
 */
export const telegramPlugin: ChannelPlugin<TelegramConfig> = {
  name: "telegram",
  configSchema: TelegramConfigSchema,
  env: { TELEGRAM_BOT_TOKEN: "botToken" },
  secretKeys: ["botToken", "webhookSecret"],
  async diagnose(config, deps, { signal }) {
    const { diagnoseTelegram } = await import("./diagnose.js");
    return diagnoseTelegram(config, accountConfigPath("telegram", deps.accountId), signal);
  },
  configProblems(config, accountId) {
    const at = accountConfigPath("telegram", accountId);
    return [
      ...(config.botToken ? [] : [tokenMissing(accountId)]),
      ...(config.mode === "webhook" ? webhookProblems(config, at) : []),
    ];
  },
  async create(config, deps) {
    if (!config.botToken) throw tokenMissing(deps.accountId);
    const { TelegramAdapter } = await import("./adapter.js");
    return new TelegramAdapter({
      botToken: config.botToken,
      apiRoot: config.apiRoot,
      accountId: deps.accountId,
      mode: config.mode,
      ...(config.webhookUrl ? { webhookUrl: config.webhookUrl } : {}),
      ...(config.webhookSecret ? { webhookSecret: config.webhookSecret } : {}),
      channelPosts: config.channelPosts,
      editedMessages: config.editedMessages,
      ...(config.pacing ? { pacing: config.pacing } : {}),
      state: deps.state,
      logger: deps.logger,
      // Only polling is a single-holder connection: any process may serve the webhook.
      ...(config.mode === "polling" && deps.lease ? { lease: deps.lease(config.leaseMs) } : {}),
    });
  },
};
