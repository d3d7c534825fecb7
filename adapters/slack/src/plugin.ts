import { accountConfigPath, type ChannelPlugin, HubError } from "@hub/core";
import { SlackAdapter } from "./adapter.js";
import { SLACK_ENV, type SlackConfig, SlackConfigSchema } from "./config.js";
import { diagnoseSlack } from "./diagnose.js";

/** The Slack channel as the hub installs it (`channels.slack`). */
export const slackPlugin: ChannelPlugin<SlackConfig> = {
  name: "slack",
  configSchema: SlackConfigSchema,
  env: SLACK_ENV,
  secretKeys: ["botToken", "signingSecret", "appToken"],
  diagnose: (config, deps, { signal }) =>
    diagnoseSlack(config, accountConfigPath("slack", deps.accountId), signal),
  create(config, deps) {
    if (!config.botToken) {
      const at = accountConfigPath("slack", deps.accountId);
      throw new HubError(
        "slack_token_missing",
        `${at} is configured without a bot token; set ${at}.botToken or SLACK_BOT_TOKEN (the xoxb- token from OAuth & Permissions).`,
      );
    }
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
      state: deps.state,
      logger: deps.logger,
    });
  },
};
