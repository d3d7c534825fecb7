// A bench hub (or its agent role) in a process of its own: `hub start` as the README starts it, with a
// config file, on the bench's Redis and the bench hub's state directory.
import { spawn } from "node:child_process";
import { createWriteStream, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { HUB_NODE_FLAGS } from "../../apps/hub/src/v8-tuning.js";

const MAIN = fileURLToPath(new URL("../../apps/hub/src/main.ts", import.meta.url));

/** How long `hub start` may take to say it started (tsx's start-up takes seconds on a loaded machine). */
const START_TIMEOUT_MS = 60_000;

/** A running bench hub process (test/support's `startHubProcess` keeps every line; this one counts them). */
export interface BenchHubProcess {
  /** Its log lines so far (`BENCH_LOG_LEVEL`, info by default, as the bench hub's own). */
  logLines(): number;
  /** The CPU (user + system, ms) it has used so far, from /proc. */
  cpuMs(): number;
  /** SIGTERM, and waits for it to drain and exit. */
  stop(): Promise<void>;
}

/**
 * Starts `hub start` with `settings` and `roles` (give `settings` a gateway when they include ingress)
 * and waits for its "hub started" line. Its log lines go to a pipe this process counts, as a hub's go
 * to its supervisor. Its environment holds nothing but its config file, state directory and log level:
 * a variable of this process's (`REDIS_URL`, `HUB_ROLES`, ...) would win over the file. If this process
 * exits first, the hub process is killed with it.
 */
export async function startBenchHubProcess(
  settings: Record<string, unknown>,
  stateDir: string,
  roles: string[],
): Promise<BenchHubProcess> {
  const configFile = join(stateDir, `hub-process-${roles.join("-")}.json5`);
  writeFileSync(configFile, JSON.stringify({ ...settings, roles }), { mode: 0o600 });
  // Started as `npm start` starts it (HUB_NODE_FLAGS); BENCH_HUB_NODE_ARGS: node's own flags for it besides
  // (`--cpu-prof --cpu-prof-dir=<dir>` for its CPU profile; a flag given there again wins).
  const nodeArgs = (process.env.BENCH_HUB_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...HUB_NODE_FLAGS, ...nodeArgs, "--import", "tsx", MAIN, "start"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? stateDir,
      HUB_CONFIG: configFile,
      HUB_STATE_DIR: stateDir,
      HUB_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let lines = 0;
  // BENCH_LOG_FILE keeps its lines too, as it keeps the in-process hub's (telegram.ts).
  const logFile = process.env.BENCH_LOG_FILE
    ? createWriteStream(process.env.BENCH_LOG_FILE, { flags: "a" })
    : undefined;
  logFile?.on("error", (error) => console.error(`BENCH_LOG_FILE: ${error.message}`));
  const output = createInterface({ input: child.stdout });
  // Ended when its output is, not at its exit: stdout can still hold lines then.
  output.once("close", () => logFile?.end());
  const started = new Promise<void>((resolve, reject) => {
    output.on("line", (line) => {
      lines++;
      logFile?.write(`${line}\n`);
      if (line.includes('"msg":"hub started"')) resolve();
    });
    child.once("error", reject);
    void exited.then(() => reject(new Error("the bench's hub process exited before it started")));
    setTimeout(
      () => reject(new Error(`the bench's hub process did not start within ${START_TIMEOUT_MS / 1000} s`)),
      START_TIMEOUT_MS,
    ).unref();
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    process.off("exit", killOnExit);
  };
  await started.catch(async (error: unknown) => {
    child.kill("SIGKILL");
    await stop();
    throw error;
  });
  return { logLines: () => lines, cpuMs: () => processCpuMs(child.pid ?? 0), stop };
}

// utime + stime of a process (fields 14 and 15 of /proc/<pid>/stat), in clock ticks of 10 ms (Linux's
// USER_HZ, 100 on every architecture the hub runs on).
function processCpuMs(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    throw new Error(`the bench's hub process (pid ${pid}) is gone; see its output above`);
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
