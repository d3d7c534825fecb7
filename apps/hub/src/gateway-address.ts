import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Where a running hub's gateway listens, as `hub start` records it in the state directory. */
export interface GatewayAddress {
  host: string;
  port: number;
}

const FILE = "gateway-address";

/** Records where this hub's gateway listens (for the health check, which cannot read the config file). */
export function writeGatewayAddress(stateDir: string, address: GatewayAddress): void {
  writeFileSync(join(stateDir, FILE), `${JSON.stringify(address)}\n`, { mode: 0o600 });
}

/** Where the hub of `stateDir` said its gateway listens, or undefined if no hub said so. */
export function readGatewayAddress(stateDir: string): GatewayAddress | undefined {
  try {
    const { host, port } = JSON.parse(readFileSync(join(stateDir, FILE), "utf8")) as Partial<GatewayAddress>;
    return typeof host === "string" && typeof port === "number" ? { host, port } : undefined;
  } catch {
    return undefined;
  }
}
