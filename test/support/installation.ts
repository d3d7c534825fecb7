import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GatewayClient } from "./gateway-client.js";
import { freePort, type HubProcess, startHubProcess } from "./hub-process.js";
import { dropPrefix, testPrefix } from "./redis.js";

/** The gateway token every installation uses. */
export const INSTALLATION_TOKEN = "crash-test-token-0123456789";

/** Options of one hub installation run as real processes. */
export interface InstallationOptions {
  /** Written as `<state dir>/hub.json5` (JSON is valid JSON5). */
  config?: Record<string, unknown>;
  /** Environment of every process (on top of the state dir, prefix and token). */
  env?: Record<string, string>;
  /** Share another installation's Redis prefix (a second machine of the same hub). */
  prefix?: string;
}

/** How one process of an installation is started. */
export interface ProcessOptions {
  /** `HUB_FAILPOINTS`, e.g. `admission.after-admit=kill`. */
  failpoints?: string;
  /** `HUB_ROLES`, e.g. `delivery`; a process without `ingress` has no gateway client. */
  roles?: string;
  env?: Record<string, string>;
  /** Return at once, without waiting for the process to be up (a failpoint may kill it while starting). */
  wait?: boolean;
}

/**
 * One hub installation (state dir + Redis prefix + config file) whose
 * processes can be started, killed, frozen and started again, as an operator
 * would run them; everything is removed by `dispose`.
 */
export interface Installation {
  prefix: string;
  stateDir: string;
  /** Starts a process; `port` is its gateway's (webhooks such as Slack's Events URL are served there). */
  start(
    options?: ProcessOptions,
  ): Promise<{ hub: HubProcess; client: GatewayClient | undefined; port: number }>;
  dispose(): Promise<void>;
}

/** Creates an installation (nothing runs until `start`). */
export function installation(name: string, options: InstallationOptions = {}): Installation {
  const prefix = options.prefix ?? testPrefix(name);
  const stateDir = mkdtempSync(join(tmpdir(), `hub-${name}-`));
  writeFileSync(join(stateDir, "hub.json5"), JSON.stringify(options.config ?? {}, null, 2));
  const processes: HubProcess[] = [];
  const clients: GatewayClient[] = [];
  return {
    prefix,
    stateDir,
    async start(p: ProcessOptions = {}) {
      const port = await freePort();
      const gateway = !p.roles || p.roles.includes("ingress");
      const env = {
        HUB_STATE_DIR: stateDir,
        HUB_REDIS_PREFIX: prefix,
        HUB_GATEWAY_TOKEN: INSTALLATION_TOKEN,
        ...options.env,
        ...p.env,
        ...(p.failpoints ? { HUB_FAILPOINTS: p.failpoints } : {}),
        ...(p.roles ? { HUB_ROLES: p.roles } : {}),
      };
      const hub = await startHubProcess(env, port, {
        gateway,
        ...(p.wait === false ? { wait: false } : {}),
      });
      processes.push(hub);
      if (!gateway || p.wait === false) return { hub, client: undefined, port };
      const client = await GatewayClient.open(port, INSTALLATION_TOKEN);
      clients.push(client);
      return { hub, client, port };
    },
    async dispose() {
      for (const c of clients) c.close();
      for (const p of processes) {
        p.resume();
        await p.kill();
      }
      rmSync(stateDir, { recursive: true, force: true });
      if (!options.prefix) await dropPrefix(prefix);
    },
  };
}
