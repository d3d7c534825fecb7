import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { REDIS_URL } from "./redis.js";

const MAIN = fileURLToPath(new URL("../../apps/hub/src/main.ts", import.meta.url));

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A hub running as a real child process (`hub start`), for crash and restart tests. */
export interface HubProcess {
  child: ChildProcess;
  output: string[];
  /** SIGKILL: no cleanup, like a crash. */
  kill(): Promise<void>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** Resolves when the process has written a line matching `pattern` (e.g. a failpoint firing). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** SIGCONT: wakes a process a `stop` failpoint froze. */
  resume(): void;
  /** Resolves when the process has exited (a `kill` failpoint). */
  readonly exited: Promise<void>;
}

/** Starts `hub start` with the given environment and waits until its gateway answers. */
export async function startHubProcess(
  env: Record<string, string>,
  port: number,
  /**
   * `gateway: false` for a process without the ingress role; `wait: false` to return at once (a failpoint
   * may kill it during start); `wrapper`: a command the hub runs under (e.g. `unshare --pid --fork`);
   * `main`: the script run instead of apps/hub/src/main.ts (one that runs it after setting up a fake).
   */
  options: { gateway?: boolean; wait?: boolean; wrapper?: string[]; main?: string } = {},
): Promise<HubProcess> {
  const output: string[] = [];
  const command = [
    ...(options.wrapper ?? []),
    process.execPath,
    "--import",
    "tsx",
    options.main ?? MAIN,
    "start",
  ];
  const child = spawn(command[0] as string, command.slice(1), {
    env: { ...process.env, REDIS_URL, HUB_GATEWAY_PORT: String(port), HUB_LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (d: Buffer) => output.push(d.toString()));
  child.stderr?.on("data", (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + 45_000; // tsx start-up alone takes 20 s and more on a loaded 2-core machine
  for (; options.wait !== false; ) {
    if (child.exitCode !== null) throw new Error(`hub exited early:\n${output.join("")}`);
    // A process without the ingress role has no gateway: wait for its start line instead.
    if (options.gateway === false) {
      if (output.join("").includes('"msg":"hub started"')) break;
    } else {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        if (res.ok) break;
      } catch {
        // not up yet
      }
    }
    if (Date.now() > deadline) throw new Error(`hub did not start:\n${output.join("")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    output,
    exited,
    waitForOutput: async (pattern, timeoutMs = 20_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(output.join(""))) {
        if (Date.now() > deadline)
          throw new Error(`hub never printed ${pattern} within ${timeoutMs} ms:\n${output.join("")}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    resume: () => void child.kill("SIGCONT"),
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGKILL");
      await exited;
    },
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** The environment that points a hub process at a fake OpenAI-compatible model server. */
export function fakeModelEnv(model: { url: string }): Record<string, string> {
  return { HUB_MODEL: "openai/test-model", OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "k" };
}
