import { type AdapterStateStore, createLogger, HubError, loadConfig, resolveStateDir } from "@hub/core";
import { channelLease } from "./adapters.js";
import { channelPlugins } from "./plugins.js";
import { ensureStateDir } from "./state.js";

/** Usage of `hub channels`. */
export const CHANNELS_USAGE = `hub channels login <channel> [--account <id>] [--phone <number>]
                                    link a device (WhatsApp: QR code, or a pairing code with --phone)`;

function flags(args: string[]): { positional: string[]; account: string; phone?: string } {
  const positional: string[] = [];
  let account = "default";
  let phone: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--account") account = args[++i] ?? account;
    else if (arg.startsWith("--account=")) account = arg.slice("--account=".length);
    else if (arg === "--phone") phone = args[++i];
    else if (arg.startsWith("--phone=")) phone = arg.slice("--phone=".length);
    else positional.push(arg);
  }
  return { positional, account, ...(phone ? { phone } : {}) };
}

const noState: AdapterStateStore = { get: async () => undefined, set: async () => undefined };

/** `hub channels login <channel>`: links an account of a channel that pairs a device, with visible progress. */
export async function channelsCommand(args: string[], configPath: string | undefined): Promise<void> {
  const { positional, account, phone } = flags(args);
  const [action, name] = positional;
  if (action !== "login" || !name) throw new HubError("usage", `Usage: ${CHANNELS_USAGE}`);
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
  const logger = createLogger({ level: process.env.HUB_LOG_LEVEL ?? "warn" });
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
