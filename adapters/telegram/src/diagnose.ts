import { type ChannelCheck, keyOrVariable } from "@hub/core";
import { Api } from "grammy";
import type { TelegramConfig } from "./config.js";
import { describeTelegramError, isTokenRefused } from "./errors.js";
import { grammySignal } from "./grammy-signal.js";

/**
 * `hub doctor` for one Telegram bot: the token (getMe), then where Telegram
 * sends its updates (getWebhookInfo) against the configured mode. A webhook
 * left set stops polling (every getUpdates answers 409); a webhook set to
 * another URL sends the updates elsewhere.
 */
export async function diagnoseTelegram(
  config: TelegramConfig,
  at: string,
  signal: AbortSignal,
): Promise<ChannelCheck[]> {
  const name = `${at}: bot token`;
  if (!config.botToken)
    return [
      {
        name,
        status: "fail",
        detail: "no bot token",
        fix: `set ${keyOrVariable(at, "botToken", "TELEGRAM_BOT_TOKEN")}`,
      },
    ];
  const api = new Api(config.botToken, { apiRoot: config.apiRoot });
  try {
    const me = await api.getMe(grammySignal(signal));
    const checks: ChannelCheck[] = [{ name, status: "ok", detail: `accepted: the bot is @${me.username}` }];
    checks.push(await webhookCheck(api, config, at, signal));
    return checks;
  } catch (error) {
    if (isTokenRefused(error))
      return [
        {
          name,
          status: "fail",
          detail: `Telegram refused it (${describeTelegramError(error)})`,
          fix: `copy the token from @BotFather (/mybots > API Token) into ${at}.botToken`,
        },
      ];
    return [
      {
        name,
        status: "fail",
        detail: `the Bot API at ${config.apiRoot} could not be reached (${describeTelegramError(error)})`,
        fix: `check this machine reaches ${config.apiRoot} (proxy, firewall, DNS) or set ${at}.apiRoot`,
      },
    ];
  }
}

async function webhookCheck(
  api: Api,
  config: TelegramConfig,
  at: string,
  signal: AbortSignal,
): Promise<ChannelCheck> {
  const name = `${at}: webhook`;
  const info = await api.getWebhookInfo(grammySignal(signal));
  if (config.mode === "polling")
    return info.url === ""
      ? { name, status: "ok", detail: "none set (polling mode)" }
      : {
          name,
          status: "fail",
          detail: `a webhook is set (${info.url}), so polling gets 409 Conflict and no updates`,
          fix: `delete it (Bot API deleteWebhook, or stop the installation that set it), or set ${at}.mode to "webhook"`,
        };
  if (info.url === "")
    return {
      name,
      status: "warn",
      detail: "no webhook is set at Telegram yet",
      fix: "the hub sets it when it starts; start the hub and run hub doctor again",
    };
  if (info.url !== config.webhookUrl)
    return {
      name,
      status: "fail",
      detail: `Telegram sends updates to ${info.url}, not to ${at}.webhookUrl (${config.webhookUrl ?? "unset"})`,
      fix: `correct ${at}.webhookUrl and restart the hub (it sets the webhook at start)`,
    };
  if (info.last_error_message && info.last_error_date && Date.now() / 1000 - info.last_error_date < 3600)
    return {
      name,
      status: "warn",
      detail: `set to ${info.url}, but Telegram's last delivery failed: ${info.last_error_message} (${info.pending_update_count} updates waiting)`,
      fix: "make the URL reachable from the internet over HTTPS and answered by the hub's gateway",
    };
  return { name, status: "ok", detail: `set to ${info.url} (${info.pending_update_count} updates waiting)` };
}
