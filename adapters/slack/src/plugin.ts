import { accountConfigPath, type ChannelPlugin, HubError, keyOrVariable } from "@hub/core";
import { missingModeKey, SLACK_ENV, type SlackConfig, SlackConfigSchema } from "./config.js";

// A sentence naming the key to set (`create` refuses with it; `hub config validate` lists it).
const tokenMissing = (accountId: string) => {
  const at = accountConfigPath("slack", accountId);
  return new HubError(
    "slack_token_missing",
    `${at} is configured without a bot token; set ${keyOrVariable(at, "botToken", "SLACK_BOT_TOKEN")} (the xoxb- token from OAuth & Permissions).`,
  );
};

/** The Slack channel as the hub installs it (`channels.slack`); Bolt is loaded only when an account is built or checked. */
export const slackPlugin: ChannelPlugin<SlackConfig> = {
  name: "slack",
  configSchema: SlackConfigSchema,
  env: SLACK_ENV,
  secretKeys: ["botToken", "signingSecret", "appToken"],
  async diagnose(config, deps, { signal }) {
    const { diagnoseSlack } = await import("./diagnose.js");
    return diagnoseSlack(config, accountConfigPath("slack", deps.accountId), signal);
  },
  configProblems(config, accountId) {
    const missing = missingModeKey(config, accountConfigPath("slack", accountId));
    return [
      ...(config.botToken ? [] : [tokenMissing(accountId)]),
      ...(missing ? [new HubError("slack_config", missing)] : []),
    ];
  },
  async create(config, deps) {
    if (!config.botToken) throw tokenMissing(deps.accountId);
    const { SlackAdapter } = await import("./adapter.js");
    return new SlackAdapter({
      botToken: config.botToken,
      mode: config.mode,
      signingSecret: config.signingSecret,
      appToken: config.appToken,
      apiUrl: config.apiUrl,
      // Each account needs its own Events URL; the default account keeps Slack's usual path.
      eventsPath:
        config.eventsPath ??
        (deps.accountId === "default" ? "/slack/events" : `/slack/events/${deps.accountId}`),
      accountId: deps.accountId,
      editedMessages: config.editedMessages,
      ...(config.pacing ? { pacing: config.pacing } : {}),
      state: deps.state,
      logger: deps.logger,
      stateDir: deps.stateDir,
    });
  },
};
