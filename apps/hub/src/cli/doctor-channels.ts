import {
  type ChannelCheck,
  type ChannelPlugin,
  createLogger,
  describeError,
  type HubConfig,
  resolveStateDir,
  WEBCHAT_CHANNEL,
} from "@hub/core";

/** A platform that has not answered in this long is reported as unreachable. */
const CHECK_TIMEOUT_MS = 15_000;

const noState = { get: async () => undefined, set: async () => undefined };

/**
 * Each enabled account of each configured channel, checked against its
 * platform by its plugin's `diagnose` (token, webhook), whether or not the hub
 * runs. The accounts are checked at once; a plugin without `diagnose` is skipped.
 */
export async function credentialChecks(
  config: HubConfig,
  plugins: ReadonlyArray<ChannelPlugin>,
): Promise<ChannelCheck[]> {
  const pending: Array<Promise<ChannelCheck[]>> = [];
  for (const [name, section] of Object.entries(config.channels)) {
    const plugin = plugins.find((p) => p.name === name);
    if (name === WEBCHAT_CHANNEL.name || !plugin?.diagnose) continue;
    for (const [accountId, account] of Object.entries(section.accounts)) {
      if (account.enabled) pending.push(diagnoseAccount(plugin, account, accountId, config));
    }
  }
  return (await Promise.all(pending)).flat();
}

async function diagnoseAccount(
  plugin: ChannelPlugin,
  account: unknown,
  accountId: string,
  config: HubConfig,
): Promise<ChannelCheck[]> {
  const signal = AbortSignal.timeout(CHECK_TIMEOUT_MS);
  const deps = {
    accountId,
    logger: createLogger({ level: "silent" }),
    state: noState,
    stateDir: resolveStateDir(),
    redis: { url: config.redis.url, prefix: config.redis.prefix },
  };
  try {
    return await plugin.diagnose!(plugin.configSchema.parse(account), deps, { signal });
  } catch (error) {
    return [
      {
        name: `channel ${plugin.name}/${accountId}`,
        status: "fail",
        detail: `its check failed: ${describeError(error)}`,
        fix: signal.aborted
          ? "the platform did not answer in time; check this machine reaches it"
          : undefined,
      },
    ];
  }
}
