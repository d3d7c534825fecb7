#!/usr/bin/env node
// Entry of `npm start`, `npm test` and `npm run bench` on a fresh machine:
// installs the workspace with pnpm (through corepack, or npx when corepack
// cannot) if needed, then runs the command. Node 20 and Redis are all it assumes.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PNPM_VERSION = "10.34.8";
const [command = "start", ...rest] = process.argv.slice(2);

function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", env: { ...process.env, ...env } });
  return r.status ?? 1;
}

function pnpm() {
  const probe = spawnSync("pnpm", ["--version"], { encoding: "utf8" });
  if (probe.status === 0 && probe.stdout.trim().split(".")[0] === PNPM_VERSION.split(".")[0])
    return ["pnpm", []];
  // corepack needs COREPACK_INTEGRITY_KEYS=0 where the registry serves no signatures.
  const env = { COREPACK_ENABLE_DOWNLOAD_PROMPT: "0", COREPACK_INTEGRITY_KEYS: "0" };
  Object.assign(process.env, env);
  const cp = spawnSync("corepack", [`pnpm@${PNPM_VERSION}`, "--version"], {
    encoding: "utf8",
    env: { ...process.env },
  });
  if (cp.status === 0) return ["corepack", [`pnpm@${PNPM_VERSION}`]];
  return ["npx", ["--yes", `pnpm@${PNPM_VERSION}`]];
}

const [pm, pmArgs] = pnpm();
const marker = join(root, "node_modules", ".modules.yaml");
const lock = join(root, "pnpm-lock.yaml");
if (!existsSync(marker) || statSync(lock).mtimeMs > statSync(marker).mtimeMs) {
  const frozen = process.env.CI ? ["--frozen-lockfile"] : [];
  // The pinned pnpm: its "update available" box is noise in a newcomer's first start.
  if (run(pm, [...pmArgs, "install", ...frozen], { npm_config_update_notifier: "false" }) !== 0) {
    console.error("bootstrap: installing dependencies failed; see the output above.");
    process.exit(1);
  }
}

// The hub runs as a direct child (node with tsx's loader, no pnpm in between), so
// signals reach it: this wrapper passes SIGTERM, SIGINT and SIGHUP on and exits with its code.
// Node's flags for the hub's process: HUB_NODE_FLAGS in apps/hub/src/v8-tuning.ts (V8 reads them only at start).
const hubNodeFlags = ["--max-semi-space-size=64"];
const hubArgs = [...hubNodeFlags, "--import", "tsx", "apps/hub/src/main.ts"];
const scripts = {
  start: [process.execPath, [...hubArgs, "start"]],
  hub: [process.execPath, hubArgs],
  test: [pm, [...pmArgs, "run", "test:all"]],
  bench: [pm, [...pmArgs, "exec", "tsx", "test/bench/run.ts"]],
  "bench:faults": [pm, [...pmArgs, "exec", "tsx", "test/bench/faults.ts"]],
};
const script = scripts[command];
if (!script) {
  console.error(`bootstrap: unknown command "${command}" (start, hub, test, bench, bench:faults)`);
  process.exit(2);
}
const child = spawn(script[0], [...script[1], ...rest], { cwd: root, stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGKILL" ? 137 : 1)));
