#!/usr/bin/env node
// What the Docker image does, without Docker: compile (scripts/build.mjs), install
// production dependencies only, start the compiled hub with plain node (no tsx),
// wait for /readyz, SIGTERM it and expect exit code 0. Needs Redis at REDIS_URL.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const work = mkdtempSync(join(tmpdir(), "hub-build-"));
const out = join(work, "app");
const fail = (why) => {
  console.error(`check-build: ${why}`);
  process.exit(1);
};
const step = (cmd, args, cwd) => {
  const r = spawnSync(cmd, args, {
    cwd,
    stdio: "inherit",
    env: { ...process.env, CI: "true", COREPACK_INTEGRITY_KEYS: "0" },
  });
  if (r.status !== 0) fail(`${cmd} ${args.join(" ")} failed`);
};
step(process.execPath, [join(root, "scripts/build.mjs"), out], root);
step("corepack", ["pnpm", "install", "--prod", "--frozen-lockfile", "--offline"], out);

const port = 20000 + Math.floor(Math.random() * 20000);
const hub = spawn(process.execPath, ["apps/hub/src/main.js", "start"], {
  cwd: out,
  stdio: "inherit",
  env: {
    ...process.env,
    HUB_STATE_DIR: join(work, "state"),
    HUB_REDIS_PREFIX: `check-build-${process.pid}`,
    HUB_GATEWAY_PORT: String(port),
    HUB_GATEWAY_TOKEN: "check-build-token-0123456789",
  },
});
const exited = new Promise((r) => hub.once("exit", (code) => r(code)));
let ready = false;
for (let i = 0; i < 100 && !ready; i++) {
  await new Promise((r) => setTimeout(r, 200));
  ready = (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200;
}
hub.kill("SIGTERM");
const code = await exited;
rmSync(work, { recursive: true, force: true });
if (!ready) fail("the compiled hub never answered /readyz with 200");
if (code !== 0) fail(`the compiled hub exited with ${code} after SIGTERM`);
console.log(
  "check-build: the compiled hub started with node alone, was ready, and drained to exit 0 on SIGTERM",
);
