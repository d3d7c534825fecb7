import { ChannelRefusedError, describeError, RateLimitedError, retryAfterMs } from "@hub/core";
import { WebAPIPlatformError, WebAPIRateLimitedError } from "@slack/web-api";

/** Slack errors at start that no retry can fix: the token or the app is wrong. */
const REFUSED_AT_START = new Set([
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "token_expired",
  "not_allowed_token_type",
  "missing_scope",
  "team_access_not_granted",
]);

/**
 * The Socket Mode client's own line about an `apps.connections.open` that Slack refused
 * ("Failed to retrieve a new WSS URL (error: ... invalid_auth)"). The client throws that
 * refusal, and the hub says it in one line with the key to fix, so the library's copy is
 * only worth a debug line.
 */
export function isRefusedSocketStartLine(text: string): boolean {
  if (!text.startsWith("Failed to retrieve a new WSS URL")) return false;
  const code = /An API error occurred: ([a-z_]+)/.exec(text)?.[1];
  return code !== undefined && REFUSED_AT_START.has(code);
}

/**
 * A start failure as the hub acts on it: `ChannelRefusedError` (fix the config), `RateLimitedError` (retried
 * no sooner than Slack's Retry-After), or transient (retried with backoff).
 */
export function classifyStartError(error: unknown, whatToDo: string): Error {
  if (error instanceof WebAPIRateLimitedError)
    return new RateLimitedError(retryAfterMs(error.retryAfter), "Slack is rate limiting the bot's start");
  // Not a Slack error code: a page from something in between (a proxy, a captive portal), quoted whole before.
  if (error instanceof WebAPIPlatformError && !/^[a-z_]{1,64}$/.test(String(error.data.error)))
    return new Error(
      "Slack's Web API answered with something that is not Slack's (a proxy's or captive portal's page?); check channels.slack.apiUrl and the network",
    );
  const code =
    error instanceof WebAPIPlatformError
      ? String(error.data.error)
      : (/\b(invalid_auth|not_authed|account_inactive|token_revoked|not_allowed_token_type)\b/.exec(
          describeError(error),
        )?.[1] ?? "");
  if (REFUSED_AT_START.has(code)) {
    return new ChannelRefusedError("slack_refused", `${whatToDo} (Slack answered ${code}).`, {
      cause: error,
    });
  }
  return error instanceof Error ? error : new Error(describeError(error));
}
