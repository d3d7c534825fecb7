import { HubError } from "@hub/core";

const OFFICIAL_API_HOST = "api.telegram.org";
const SECRET = /^[A-Za-z0-9_-]{1,256}$/;

/** The webhook settings of one bot, as setWebhook takes them. */
export interface WebhookSettings {
  apiRoot?: string | undefined;
  webhookUrl?: string | undefined;
  webhookSecret?: string | undefined;
}

/**
 * What Telegram's setWebhook would refuse in these settings, each as a sentence naming the key (`at` is
 * the account's config path): a missing URL or secret, a secret with characters outside A–Z a–z 0–9 _ -
 * or over 256 of them, and an http:// URL with Telegram's own Bot API (a self-hosted one in `--local`
 * mode takes http). Checked only in webhook mode: polling never sends them.
 */
export function webhookProblems(settings: WebhookSettings, at: string): HubError[] {
  const { webhookUrl, webhookSecret } = settings;
  if (!webhookUrl || !webhookSecret)
    return [
      new HubError(
        "telegram_webhook_config",
        `Telegram webhook mode needs ${at}.webhookUrl and ${at}.webhookSecret.`,
      ),
    ];
  const problems: HubError[] = [];
  if (!SECRET.test(webhookSecret))
    problems.push(
      new HubError(
        "telegram_webhook_secret",
        `${at}.webhookSecret may hold only letters A-Z and a-z, digits, _ and -, at most 256 of them: Telegram refuses any other.`,
      ),
    );
  const apiHost = URL.canParse(settings.apiRoot ?? "")
    ? new URL(settings.apiRoot ?? "").hostname
    : OFFICIAL_API_HOST;
  if (apiHost === OFFICIAL_API_HOST && URL.canParse(webhookUrl) && new URL(webhookUrl).protocol !== "https:")
    problems.push(
      new HubError(
        "telegram_webhook_url",
        `${at}.webhookUrl must be an https:// URL: Telegram sends webhooks over HTTPS only (a self-hosted Bot API in --local mode takes http://).`,
      ),
    );
  return problems;
}
