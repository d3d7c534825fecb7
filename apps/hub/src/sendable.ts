import { type HubConfig, HubError, type ReplySink, WEBCHAT_CHANNEL } from "@hub/core";
import type { FailedDeliveries, FailedDelivery } from "@hub/reply";

/**
 * Refuses at once a channel or account the config does not have (or has
 * disabled): no hub could deliver to it, and the message would only sit in the
 * queue until delivery gives up on it.
 */
export function checkSendable(config: HubConfig, channel: string, accountId: string): void {
  const problem = unsendable(config, channel, accountId);
  if (problem) throw new HubError(problem.code, problem.message);
}

/** Why no hub with this config could send through a channel account, or undefined when one can. */
export function unsendable(
  config: HubConfig,
  channel: string,
  accountId: string,
): { code: string; message: string } | undefined {
  if (channel === WEBCHAT_CHANNEL.name) return undefined;
  const section = config.channels[channel];
  if (!section) {
    const configured = [WEBCHAT_CHANNEL.name, ...Object.keys(config.channels)].join(", ");
    return {
      code: "send_channel_unknown",
      message: `No channel "${channel}" is configured (configured: ${configured}); add channels.${channel} to the config, or send to one of those.`,
    };
  }
  const account = section.accounts[accountId];
  if (!account)
    return {
      code: "send_account_unknown",
      message: `channels.${channel} has no account "${accountId}" (accounts: ${Object.keys(section.accounts).join(", ")}); name one with --account.`,
    };
  if (!account.enabled)
    return {
      code: "send_account_disabled",
      message: `The ${channel} account "${accountId}" is disabled (enabled: false in the config), so no hub sends through it.`,
    };
  return undefined;
}

/** What a retry of failed deliveries did: the ones queued again, and the ones left listed, with why. */
export interface RetryResult {
  retried: FailedDelivery[];
  skipped: Array<{ id: string; reason: string }>;
}

/**
 * Sends failed deliveries again (those named by id; all when `ids` is undefined, none when it is
 * empty), except to a target no hub with this config can send to: such a delivery stays listed, with
 * why (it would only fail again). `hub deliveries retry` and the control page's Retry both come here.
 */
export async function retrySendable(
  failed: FailedDeliveries,
  replies: ReplySink,
  config: HubConfig,
  ids?: ReadonlyArray<string>,
): Promise<RetryResult> {
  const listed = await failed.list();
  const chosen = listed.filter((f) => !ids || ids.includes(f.id));
  // A named id that is not listed (a typo, or retried already) is said, not passed over in silence.
  const skipped: RetryResult["skipped"] = (ids ?? [])
    .filter((id) => !listed.some((f) => f.id === id))
    .map((id) => ({ id, reason: 'no failed delivery has this id; "hub deliveries failed" lists them' }));
  const sendable = chosen.flatMap((f) => {
    const problem = unsendable(config, f.target.channel, f.target.accountId);
    if (!problem) return [f.id];
    skipped.push({ id: f.id, reason: problem.message });
    return [];
  });
  const retried = sendable.length > 0 ? await failed.retry(replies, sendable) : [];
  return { retried, skipped };
}
