import {
  type AccountLease,
  accountConfigPath,
  type ChannelLoginOptions,
  type ChannelPlugin,
  type ChannelPluginDeps,
  connectionLeaseKey,
  describeError,
  describeHolder,
  HubError,
} from "@hub/core";
import { authDirOf } from "./auth-dir.js";
import { type WhatsAppConfig, WhatsAppConfigSchema } from "./config.js";
import type { BaileysConnectorOptions, WhatsAppConnector } from "./socket.js";

/** Where the accounts this process builds get their connection; unset, real baileys sockets. */
let connectorSeam: ((options: BaileysConnectorOptions) => WhatsAppConnector) | undefined;

/**
 * Makes the accounts this process builds from now on connect through `make` instead of baileys: the seam
 * through which a test runs a whole hub process (`hub start`) on a fake linked device
 * (adapters/whatsapp/test/fake-hub.ts). The hub itself never calls it.
 */
export function useWhatsAppConnector(make: (options: BaileysConnectorOptions) => WhatsAppConnector): void {
  connectorSeam = make;
}

/** The Redis key of an account's lease (one hub process holds its socket). */
export function leaseKey(prefix: string, accountId: string): string {
  return connectionLeaseKey(prefix, "whatsapp", accountId);
}

function leaseOf(config: WhatsAppConfig, deps: ChannelPluginDeps): AccountLease | undefined {
  return deps.lease?.(config.leaseMs);
}

/** Holds the account's lease while linking, so no hub process connects with half-written credentials. */
async function holdForLogin(lease: AccountLease | undefined, print: (text: string) => void) {
  if (!lease) return undefined;
  let held: { held: boolean; holder: string };
  try {
    held = await lease.hold();
  } catch (error) {
    print(
      `Redis is not reachable (${describeError(error)}); make sure no hub runs this account while linking.`,
    );
    await lease.close?.();
    return undefined;
  }
  if (!held.held)
    throw new HubError(
      "whatsapp_login_busy",
      `A running hub process (${describeHolder(held.holder)}) holds this WhatsApp account; it is linked already. Stop that hub first to link again.`,
    );
  return setInterval(() => void lease.hold().catch(() => undefined), lease.ttlMs / 3);
}

/**
 * WhatsApp as a channel plugin: `channels.whatsapp` (or `.accounts.<id>`)
 * builds one linked device per account, its credentials in the state
 * directory (`whatsapp/<accountId>` unless `authDir` says otherwise) and its
 * socket held by one hub process at a time through a lease in the hub's Redis.
 * `hub channels login whatsapp` links the device (QR code, or `--phone`). baileys is loaded only when an
 * account is built, checked or linked.
 */
export const whatsappPlugin: ChannelPlugin<WhatsAppConfig> = {
  name: "whatsapp",
  configSchema: WhatsAppConfigSchema,
  env: { WHATSAPP_AUTH_DIR: "authDir" },
  async diagnose(config, deps) {
    const authDir = authDirOf(deps.stateDir, deps.accountId, config.authDir);
    const name = `${accountConfigPath("whatsapp", deps.accountId)}: linked device`;
    const { isLinked } = await import("./auth-state.js");
    // WhatsApp has no way to check a linked device without connecting it; the credentials on disk are what the hub uses.
    if (await isLinked(authDir))
      return [{ name, status: "ok", detail: `linked (credentials in ${authDir})` }];
    return [
      {
        name,
        status: "fail",
        detail: `not linked (no complete credentials in ${authDir})`,
        fix: `run: npm run -s hub -- channels login whatsapp${deps.accountId === "default" ? "" : ` --account ${deps.accountId}`}`,
      },
    ];
  },
  async create(config, deps) {
    const logger = deps.logger;
    const authDir = authDirOf(deps.stateDir, deps.accountId, config.authDir);
    const lease = leaseOf(config, deps);
    const [{ WhatsAppAdapter }, { baileysConnector }, { readLinkCode }, { messageJournal }] =
      await Promise.all([
        import("./adapter.js"),
        import("./socket.js"),
        import("./link-code.js"),
        import("./journal.js"),
      ]);
    return new WhatsAppAdapter({
      accountId: deps.accountId,
      connector: (connectorSeam ?? baileysConnector)({ authDir, logger }),
      logger,
      ...(lease ? { lease } : {}),
      textLimit: config.textLimit,
      maxMessageAgeMs: config.maxMessageAgeMs,
      sendIntervalMs: config.sendIntervalMs,
      groupSendIntervalMs: config.groupSendIntervalMs,
      ...(config.pacing ? { pacing: config.pacing } : {}),
      presence: config.presence,
      reconnect: { initialMs: config.reconnectInitialMs, maxMs: config.reconnectMaxMs },
      pendingLink: () => readLinkCode(authDir),
      linkPollMs: 2000,
      journal: messageJournal(deps.stateDir, deps.accountId, logger),
    });
  },
  async login(config, deps, options: ChannelLoginOptions) {
    const authDir = authDirOf(deps.stateDir, deps.accountId, config.authDir);
    const [{ isLinked }, { linkDevice }, { openBaileysSocket }, { publishLinkCode }] = await Promise.all([
      import("./auth-state.js"),
      import("./login.js"),
      import("./socket.js"),
      import("./link-code.js"),
    ]);
    if (await isLinked(authDir)) {
      options.print(`WhatsApp account "${deps.accountId}" is linked already (${authDir}).`);
      options.print(
        "To link another phone, unlink this device on the phone (or remove that folder), then run this again.",
      );
      return;
    }
    const lease = leaseOf(config, deps);
    const renew = await holdForLogin(lease, options.print).catch(async (error) => {
      await lease?.close?.();
      throw error;
    });
    try {
      await linkDevice({
        open: () => openBaileysSocket({ authDir, logger: deps.logger }),
        print: options.print,
        phone: options.phone,
        onLink: (link) => publishLinkCode(authDir, link),
      });
    } finally {
      clearInterval(renew);
      await lease?.close?.();
    }
  },
};
