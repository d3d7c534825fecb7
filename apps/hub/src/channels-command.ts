import { type AdapterStateStore, createLogger, HubError, loadConfig, resolveStateDir } from "@hub/core";
import { channelLease } from "./adapters.js";
import { channelPlugins } from "./plugins.js";
import { ensureStateDir } from "./state.js";

const noState: AdapterStateStore = { get: async () => undefined, set: async () => undefined };

/** `hub channels login <channel>`: links an account of a channel that pairs a device, with visible progress. */
export async function loginChannel(
  name: string,
  options: { account: string; phone?: string | undefined },
  configPath: string | undefined,
): Promise<void> {
  const { account, phone } = options;
  const plugin = channelPlugins.find((p) => p.name === name);
  if (!plugin?.login) {
    const linkable = channelPlugins.filter((p) => p.login).map((p) => p.name);
    throw new HubError(
      "channel_no_login",
      `"${name}" has no interactive login (channels linked by a device: ${linkable.join(", ") || "none"}); other channels take a token in the config.`,
    );
  }
  const { config } = loadConfig({ path: configPath, plugins: channelPlugins });
  const configured = config.channels[name]?.accounts[account];
  if (!configured && account !== "default")
    throw new HubError(
      "channel_account_unknown",
      `channels.${name}.accounts.${account} is not in the config.`,
    );
  const stateDir = resolveStateDir();
  ensureStateDir(stateDir);
  // HUB_LOG_LEVEL, when set, is checked by createLogger itself (an unknown level is a clear error).
  const logger = createLogger(process.env.HUB_LOG_LEVEL ? {} : { level: "warn" });
  await plugin.login(
    configured ?? plugin.configSchema.parse({}),
    {
      accountId: account,
      logger,
      state: noState,
      stateDir,
      redis: { url: config.redis.url, prefix: config.redis.prefix },
      lease: channelLease(config.redis, name, account, logger),
    },
    { print: (text) => console.log(text), phone },
  );
}
