#!/usr/bin/env node
// What the Docker image does, without Docker: compile (scripts/build.mjs), install
// production dependencies only, start the compiled hub with plain node (no tsx),
// wait for /readyz (its agent role on a worker thread), run the image's HEALTHCHECK (apps/hub/src/healthcheck.js: 0 while the hub is
// ready, 1 once it stopped; the port comes from the config file, as an operator may set it), SIGTERM
// the hub and expect exit code 0; then the same for a delivery-only process (no gateway: the health
// check asks its health listener). Needs Redis at REDIS_URL.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";

const prefix = `check-build-${process.pid}`;
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
const stateDir = join(work, "state");
mkdirSync(stateDir, { mode: 0o700 });
const configFile = join(stateDir, "hub.json5");
// The agent role on a worker thread: the compiled thread entry must load with plain node too (readiness asks it).
writeFileSync(configFile, `{ gateway: { port: ${port} }, agent: { threads: 1 } }\n`);
const { HUB_GATEWAY_PORT: _unset, ...inherited } = process.env;
const env = { ...inherited, HUB_STATE_DIR: stateDir };
// Node's flags as the Dockerfile's CMD gives them (HUB_NODE_FLAGS in apps/hub/src/v8-tuning.ts).
const nodeFlags = ["--max-semi-space-size=64"];
const hub = spawn(process.execPath, [...nodeFlags, "apps/hub/src/main.js", "--config", configFile, "start"], {
  cwd: out,
  stdio: "inherit",
  env: {
    ...env,
    HUB_REDIS_PREFIX: prefix,
    HUB_GATEWAY_TOKEN: "check-build-token-0123456789",
  },
});
const healthcheck = () =>
  spawnSync(process.execPath, ["apps/hub/src/healthcheck.js"], { cwd: out, env }).status;
const exited = new Promise((r) => hub.once("exit", (code) => r(code)));
let ready = false;
for (let i = 0; i < 100 && !ready; i++) {
  await new Promise((r) => setTimeout(r, 200));
  ready = (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200;
}
const healthyWhileReady = ready ? healthcheck() : undefined;
hub.kill("SIGTERM");
const code = await exited;
const healthyAfterStop = healthcheck();
// A container of a process without the ingress role: the same HEALTHCHECK finds its health listener.
const delivery = spawn(
  process.execPath,
  [...nodeFlags, "apps/hub/src/main.js", "start", "--role", "delivery"],
  {
    cwd: out,
    stdio: "inherit",
    env: { ...env, HUB_REDIS_PREFIX: prefix },
  },
);
const deliveryExited = new Promise((r) => delivery.once("exit", (code) => r(code)));
let deliveryHealthy = false;
for (let i = 0; i < 100 && !deliveryHealthy; i++) {
  await new Promise((r) => setTimeout(r, 200));
  deliveryHealthy = healthcheck() === 0;
}
delivery.kill("SIGTERM");
const deliveryCode = await deliveryExited;
rmSync(work, { recursive: true, force: true });
await dropKeys();
if (!deliveryHealthy) fail("the health check never passed for a delivery-only hub process");
if (deliveryCode !== 0) fail(`the delivery-only hub exited with ${deliveryCode} after SIGTERM`);
if (!ready) fail("the compiled hub never answered /readyz with 200");
if (healthyWhileReady !== 0)
  fail(`the health check exited with ${healthyWhileReady} while the hub was ready`);
if (code !== 0) fail(`the compiled hub exited with ${code} after SIGTERM`);
if (healthyAfterStop !== 1) fail(`the health check exited with ${healthyAfterStop} after the hub stopped`);
console.log(
  "check-build: the compiled hub started with node alone, was ready (its health check said so, for a delivery-only process too), and drained to exit 0 on SIGTERM",
);

// The two hubs' keys (every one starts with the hash-tagged prefix): a check leaves nothing in the Redis it used.
async function dropKeys() {
  const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { maxRetriesPerRequest: 1 });
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `{${prefix}}*`, "COUNT", 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}
