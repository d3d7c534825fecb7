import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PID_SPACE } from "@hub/core/process-identity";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, startHubProcess } from "../../../test/support/hub-process.js";
import { dropPrefix, testPrefix } from "../../../test/support/redis.js";
import { localHealthRecords } from "../src/health-record.js";

// The Docker image's HEALTHCHECK: it cannot read the config file, so it asks where `hub start` recorded
// its gateway in the state directory.
const HEALTHCHECK = fileURLToPath(new URL("../src/healthcheck.ts", import.meta.url));
const stateDir = mkdtempSync(join(tmpdir(), "hub-health-"));
const prefix = testPrefix("health");
afterAll(async () => {
  rmSync(stateDir, { recursive: true, force: true });
  await dropPrefix(prefix);
});

function healthcheck(): { code: number | null; out: string } {
  const { HUB_GATEWAY_PORT: _unset, ...env } = process.env;
  const { status, stdout } = spawnSync(process.execPath, ["--import", "tsx", HEALTHCHECK], {
    env: { ...env, HUB_STATE_DIR: stateDir },
    timeout: 30_000,
  });
  return { code: status, out: String(stdout) };
}

describe("the health check", { timeout: 120_000 }, () => {
  it("finds a gateway port set in the config file: 0 while the hub is ready, 1 once it stopped", async () => {
    const port = await freePort();
    const config = join(stateDir, "hub.json5");
    writeFileSync(config, JSON.stringify({ gateway: { port } }));
    // (startHubProcess also sets HUB_GATEWAY_PORT for the hub; the health check runs without it.)
    const hub = await startHubProcess(
      {
        HUB_STATE_DIR: stateDir,
        HUB_CONFIG: config,
        HUB_REDIS_PREFIX: prefix,
        HUB_GATEWAY_PORT: String(port),
      },
      port,
    );
    try {
      await expect
        .poll(() => fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status), { timeout: 30_000 })
        .toBe(200);
      expect(healthcheck().code).toBe(0);
    } finally {
      await hub.stop();
    }
    // Its record went with it: the check asks no port another hub of this machine may listen on.
    expect(readdirSync(join(stateDir, "health"))).toEqual([]);
    const stopped = healthcheck();
    expect(stopped.code).toBe(1);
    expect(stopped.out).toContain("no hub process of this container or machine is running");
  });

  it("a record a killed process left is ignored by the check and removed by the next start", async () => {
    const port = await freePort();
    const env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix };
    const killed = await startHubProcess(env, port);
    await killed.kill();
    const left = readdirSync(join(stateDir, "health"));
    expect(left).toEqual([expect.stringMatching(new RegExp(`-${killed.child.pid}\\.json$`))]);
    const check = healthcheck();
    expect(check.code).toBe(1);
    expect(check.out).toContain("no hub process of this container or machine is running");
    const next = await startHubProcess(env, port);
    try {
      expect(readdirSync(join(stateDir, "health"))).toEqual([
        expect.stringMatching(new RegExp(`-${next.child.pid}\\.json$`)),
      ]);
      expect(healthcheck().code).toBe(0);
    } finally {
      await next.stop();
    }
  });

  it("a state directory where the address cannot be written is a warning, not a stop", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hub-health-ro-"));
    writeFileSync(join(dir, "health"), ""); // a file where the records' directory would go: the write fails
    const port = await freePort();
    const hub = await startHubProcess({ HUB_STATE_DIR: dir, HUB_REDIS_PREFIX: prefix }, port);
    try {
      await hub.waitForOutput(/could not record this process's probe address for the health check/);
      await new Promise((r) => setTimeout(r, 300));
      expect(hub.child.exitCode).toBeNull();
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).ok).toBe(true);
    } finally {
      await hub.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a record whose pid now belongs to another process (the hub was killed, its pid reused) is not a running hub", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hub-health-reused-"));
    const other = spawn("sleep", ["30"]);
    try {
      mkdirSync(join(dir, "health"));
      // Written by a hub that ran as this pid earlier (another start time), then was killed.
      const left = {
        host: "127.0.0.1",
        port: 9,
        pid: other.pid,
        pidSpace: PID_SPACE,
        roles: ["agent"],
        started: "1",
      };
      writeFileSync(join(dir, "health", `${PID_SPACE}-${other.pid}.json`), JSON.stringify(left));
      expect(localHealthRecords(dir)).toEqual([]);
    } finally {
      other.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
