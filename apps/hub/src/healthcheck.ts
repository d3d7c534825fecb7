// `node apps/hub/src/healthcheck.js` (the Docker image's HEALTHCHECK): exits 0 when the hub of this state
// directory ($HUB_STATE_DIR, else ~/.hub) answers /readyz, else 1. It asks where `hub start` recorded its
// gateway (so a port or host set in the config file is found, not only HUB_GATEWAY_PORT), and imports
// nothing else of the hub: a check every few seconds costs a bare Node start.
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { readGatewayAddress } from "./gateway-address.js";

const TIMEOUT_MS = 2500;

const stateDir = resolve(process.env.HUB_STATE_DIR ?? join(homedir(), ".hub"));
const recorded = readGatewayAddress(stateDir);
const port = recorded?.port ?? Number(process.env.HUB_GATEWAY_PORT ?? 18789);
// A gateway on every interface answers on loopback too; one on a single address only there.
const wildcard = !recorded || ["0.0.0.0", "::", ""].includes(recorded.host);
const host = wildcard ? "127.0.0.1" : recorded.host.includes(":") ? `[${recorded.host}]` : recorded.host;
try {
  const response = await fetch(`http://${host}:${port}/readyz`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  process.exit(response.ok ? 0 : 1);
} catch {
  process.exit(1);
}
