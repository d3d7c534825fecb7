import type { ChannelCheck } from "@hub/core";
import { LogLevel, WebAPIPlatformError, WebClient } from "@slack/web-api";
import type { SlackConfig } from "./config.js";

/**
 * `hub doctor` for one Slack app: the bot token (auth.test), and in Socket Mode
 * the app-level token (apps.connections.open hands out a URL without dialing it).
 * The Events API's Request URL lives in the app's settings at Slack, which no
 * token can read, so HTTP mode is checked no further than the signing secret being set.
 */
export async function diagnoseSlack(
  config: SlackConfig,
  at: string,
  signal: AbortSignal,
): Promise<ChannelCheck[]> {
  const checks = [await tokenCheck(config.botToken, "botToken", "auth.test", config, at, signal)];
  if (config.mode === "socket")
    checks.push(await tokenCheck(config.appToken, "appToken", "apps.connections.open", config, at, signal));
  else if (!config.signingSecret)
    checks.push({
      name: `${at}: signingSecret`,
      status: "fail",
      detail: "not set: every Events API request would be refused",
      fix: `copy Basic Information > App Credentials > Signing Secret into ${at}.signingSecret`,
    });
  return checks;
}

async function tokenCheck(
  token: string | undefined,
  key: "botToken" | "appToken",
  method: "auth.test" | "apps.connections.open",
  config: SlackConfig,
  at: string,
  signal: AbortSignal,
): Promise<ChannelCheck> {
  const name = `${at}: ${key}`;
  const where =
    key === "botToken"
      ? "OAuth & Permissions > Bot User OAuth Token (xoxb-...)"
      : "Basic Information > App-Level Tokens, with connections:write (xapp-...)";
  if (!token) return { name, status: "fail", detail: "not set", fix: `copy ${where} into ${at}.${key}` };
  const client = new WebClient(token, {
    slackApiUrl: config.apiUrl,
    retryConfig: { retries: 0 },
    timeout: 10_000,
    // The failure is this check's own line: the client's "[WARN] http request failed" would be a second.
    logLevel: LogLevel.ERROR,
  });
  const aborted = new Promise<never>((_, reject) =>
    signal.addEventListener("abort", () => reject(new Error("no answer in time")), { once: true }),
  );
  try {
    const who =
      method === "auth.test"
        ? await Promise.race([client.auth.test(), aborted]).then((a) => `the bot ${a.user} in ${a.team}`)
        : await Promise.race([client.apps.connections.open(), aborted]).then(() => "Socket Mode");
    return { name, status: "ok", detail: `accepted (${who})` };
  } catch (error) {
    if (error instanceof WebAPIPlatformError)
      return {
        name,
        status: "fail",
        detail: `Slack refused it (${error.data.error})`,
        fix: `copy ${where} into ${at}.${key}`,
      };
    return {
      name,
      status: "fail",
      detail: `Slack's Web API at ${config.apiUrl} could not be reached (${(error as Error).message})`,
      fix: `check this machine reaches ${config.apiUrl} (proxy, firewall, DNS) or set ${at}.apiUrl`,
    };
  }
}
