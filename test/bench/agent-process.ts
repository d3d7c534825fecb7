// A bench hub's agent role in a process of its own: `hub start` as the README starts it, with a config
// file, on the bench hub's Redis and state directory.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../apps/hub/src/main.ts", import.meta.url));

/** A running agent-only hub process. */
export interface AgentProcess {
  /** Its log lines so far (info level, as the bench hub's own). */
  logLines(): number;
  /** The CPU (user + system, ms) it has used so far, from /proc. */
  cpuMs(): number;
  /** SIGTERM, and waits for it to drain and exit. */
  stop(): Promise<void>;
}

/**
 * Starts `hub start` with `settings` and roles `["agent"]` (no gateway: it has no ingress role) and
 * waits for its "hub started" line. Its log lines go to a pipe this process counts, as a hub's go
 * to its supervisor.
 */
export async function startAgentProcess(
  settings: Record<string, unknown>,
  stateDir: string,
): Promise<AgentProcess> {
  const configFile = join(stateDir, "agent-process.json5");
  writeFileSync(configFile, JSON.stringify({ ...settings, roles: ["agent"] }), { mode: 0o600 });
  const child = spawn(process.execPath, ["--import", "tsx", MAIN, "start"], {
    env: { ...process.env, HUB_CONFIG: configFile, HUB_STATE_DIR: stateDir, HUB_LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let lines = 0;
  let started: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    started = resolve;
  });
  child.stdout.on("data", (chunk: Buffer) => {
    const text = chunk.toString();
    for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) lines++;
    if (text.includes('"msg":"hub started"')) started();
  });
  const early = exited.then(() => {
    throw new Error("the bench's agent process exited before it started; see its output above");
  });
  await Promise.race([ready, early]);
  early.catch(() => {});
  return {
    logLines: () => lines,
    cpuMs: () => processCpuMs(child.pid ?? 0),
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

// utime + stime of a process (fields 14 and 15 of /proc/<pid>/stat, in clock ticks of 10 ms).
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
