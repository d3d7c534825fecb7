import type { HubConfig } from "./config.js";
import { accountConfigPath } from "./plugin.js";

/**
 * Settings that are valid but cannot do what they seem to say, as sentences with the fix: `hub start` logs
 * them and `hub config validate` prints them (neither fails on them).
 */
export function configWarnings(config: HubConfig): string[] {
  const warnings: string[] = [];
  for (const [channel, section] of Object.entries(config.channels)) {
    for (const [accountId, account] of Object.entries(section.accounts)) {
      if (!account.enabled || account.dmPolicy !== "open" || account.allowFrom.includes("*")) continue;
      const at = accountConfigPath(channel, accountId);
      warnings.push(
        `${at}.dmPolicy is "open" but ${at}.allowFrom has no "*", so no direct message is answered; add "*" to allowFrom to answer everyone, or set dmPolicy to "allowlist" to answer only the senders listed.`,
      );
    }
  }
  return warnings;
}
