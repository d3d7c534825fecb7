// `node apps/hub/src/healthcheck.js [--pid <pid>]` (the Docker image's HEALTHCHECK): exits 0 when every hub
// process of this state directory ($HUB_STATE_DIR, else ~/.hub) that runs here (in this container, or on this
// machine outside containers) answers /readyz, else 1 with the reasons; `--pid` checks that one process only.
// Each process records where it answers (its gateway, or without the ingress role its health listener) in
// <state dir>/health/, so a port set in the config file is found, and processes sharing a state directory
// (other containers, other machines) are not asked. It imports nothing else of the hub: a check every few
// seconds costs a bare Node start.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { type HealthRecord, localHealthRecords } from "./health-record.js";

const TIMEOUT_MS = 2500;

/** What one process answered: null when it is ready, else why not. */
async function probe(host: string, port: number): Promise<string | null> {
  // A listener on every interface answers on loopback too; one on a single address only there.
  const at = ["0.0.0.0", "::", ""].includes(host) ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  try {
    const response = await fetch(`http://${at}:${port}/readyz`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    if (response.ok) return null;
    const body = (await response.json().catch(() => ({}))) as { reasons?: unknown };
    return Array.isArray(body.reasons) ? body.reasons.join("; ") : `/readyz answered ${response.status}`;
  } catch (error) {
    return `nothing answers at ${at}:${port} (${(error as Error).message})`;
  }
}

function pidArgument(): number | undefined {
  const at = process.argv.indexOf("--pid");
  if (at < 0) return undefined;
  const pid = Number(process.argv[at + 1]);
  if (Number.isInteger(pid) && pid > 0) return pid;
  console.log("--pid needs the process id of a running hub, e.g. --pid 1");
  process.exit(1);
}

const stateDir = resolve(process.env.HUB_STATE_DIR ?? join(homedir(), ".hub"));
const recordsDir = join(stateDir, "health");
const pid = pidArgument();
const records: Array<Pick<HealthRecord, "host" | "port"> & { name: string }> = localHealthRecords(
  stateDir,
  pid,
).map((r) => ({ ...r, name: `hub process ${r.pid} (${r.roles.join(", ")})` }));
if (records.length === 0 && (pid !== undefined || existsSync(recordsDir))) {
  const which = pid === undefined ? "process of this container or machine" : `process ${pid}`;
  console.log(`no hub ${which} is running: none has recorded its address in ${recordsDir}`);
  process.exit(1);
}
// No records at all (the state directory was not writable): a gateway on its usual port.
if (records.length === 0) {
  const port = Number(process.env.HUB_GATEWAY_PORT ?? 18789);
  records.push({ host: "127.0.0.1", port, name: `the hub (no address recorded in ${recordsDir})` });
}
let failed = false;
for (const { host, port, name } of records) {
  const problem = await probe(host, port);
  if (problem !== null) console.log(`${name} is not ready: ${problem}`);
  failed ||= problem !== null;
}
process.exit(failed ? 1 : 0);
