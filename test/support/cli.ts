import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { REDIS_URL } from "./redis.js";

const MAIN = fileURLToPath(new URL("../../apps/hub/src/main.ts", import.meta.url));

/** What one `hub ...` invocation printed and how it exited. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `hub` command line (a child process) with the given environment (as another user with `as`). */
export function runCli(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 20_000,
  as?: { uid: number; gid: number },
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", MAIN, ...args],
      { env: { ...process.env, REDIS_URL, ...env }, timeout: timeoutMs, ...as },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
