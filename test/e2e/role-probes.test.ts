import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, testPrefix, waitFor } from "../support/redis.js";
import { hasRedisServer, startOwnRedis } from "../support/redis-server.js";

// Every hub process answers probes about itself, whatever its roles: one without the ingress role on its
// health listener (health.host, health.port), which the Docker HEALTHCHECK (healthcheck.ts) finds.
const HEALTHCHECK = fileURLToPath(new URL("../../apps/hub/src/healthcheck.ts", import.meta.url));
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Runs the health check as the image does; resolves with its exit code and output. */
function healthcheck(stateDir: string): Promise<{ code: number; out: string }> {
  const { HUB_GATEWAY_PORT: _unset, ...env } = process.env;
  const command = [process.execPath, "--import", "tsx", HEALTHCHECK];
  return new Promise((resolve) => {
    execFile(
      command[0] as string,
      command.slice(1),
      { env: { ...env, HUB_STATE_DIR: stateDir }, timeout: 30_000 },
      (error, stdout) => resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout }),
    );
  });
}

/** A state dir and prefix of this test, removed after it. */
function installation(name: string): { stateDir: string; prefix: string } {
  const stateDir = mkdtempSync(join(tmpdir(), `hub-probes-${name}-`));
  const prefix = testPrefix(name);
  cleanups.push(async () => {
    rmSync(stateDir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });
  return { stateDir, prefix };
}

async function started(
  env: Record<string, string>,
  options: { gateway?: boolean } = {},
): Promise<HubProcess> {
  const hub = await startHubProcess(env, await freePort(), options);
  cleanups.push(() => hub.kill());
  return hub;
}

/** Where a process without the ingress role answers its probes, from its start line. */
function probesOf(hub: HubProcess): string {
  const match = /"probes":"([^"]+)"/.exec(hub.output.join(""));
  if (!match) throw new Error(`no probe address in the start line:\n${hub.output.join("")}`);
  return `http://${match[1]}`;
}

describe("probes of a process without the ingress role", { timeout: 180_000 }, () => {
  it("an agent-only and a delivery-only process answer /healthz, /readyz and /metrics; the health check passes", async () => {
    const agentDir = installation("agent");
    const deliveryDir = installation("delivery");
    const healthPort = await freePort();
    const [agent, delivery] = await Promise.all([
      started(
        { HUB_STATE_DIR: agentDir.stateDir, HUB_REDIS_PREFIX: agentDir.prefix, HUB_ROLES: "agent" },
        { gateway: false },
      ),
      started(
        {
          HUB_STATE_DIR: deliveryDir.stateDir,
          HUB_REDIS_PREFIX: deliveryDir.prefix,
          HUB_ROLES: "delivery",
          HUB_HEALTH_PORT: String(healthPort),
        },
        { gateway: false },
      ),
    ]);
    // health.port chooses the port; by default the system picks a free one on loopback.
    expect(probesOf(delivery)).toBe(`http://127.0.0.1:${healthPort}`);
    expect(probesOf(agent)).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    for (const hub of [agent, delivery]) {
      expect(await (await fetch(`${probesOf(hub)}/healthz`)).json()).toEqual({ ok: true });
      expect(await (await fetch(`${probesOf(hub)}/readyz`)).json()).toEqual({ ready: true, reasons: [] });
      expect(await (await fetch(`${probesOf(hub)}/metrics`)).text()).toMatch(/^hub_queue_depth/m);
      expect((await fetch(`${probesOf(hub)}/control`)).status).toBe(404);
    }
    const checks = await Promise.all([healthcheck(agentDir.stateDir), healthcheck(deliveryDir.stateDir)]);
    expect(checks.map((c) => c.code)).toEqual([0, 0]);
  });

  it("a health port already in use stops the start with a sentence naming the setting", async () => {
    const { stateDir, prefix } = installation("inuse");
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", () => resolve()));
    cleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as AddressInfo).port;
    const env = {
      HUB_STATE_DIR: stateDir,
      HUB_REDIS_PREFIX: prefix,
      HUB_ROLES: "agent",
      HUB_HEALTH_PORT: String(port),
    };
    await expect(started(env, { gateway: false })).rejects.toThrow(
      `Port ${port} on 127.0.0.1 is already in use; stop the other program or set HUB_HEALTH_PORT (or health.port) to a free port.`,
    );
  });

  it.runIf(hasRedisServer())(
    "is not ready while Redis is gone, and ready again once it is back",
    async () => {
      const redis = await startOwnRedis();
      cleanups.push(() => redis.stop());
      const { stateDir, prefix } = installation("redis");
      const env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix, REDIS_URL: redis.url };
      const hub = await started({ ...env, HUB_ROLES: "delivery" }, { gateway: false });
      expect((await healthcheck(stateDir)).code).toBe(0);
      const restarted = redis.restart({ downMs: 8000 });
      await waitFor(async () => (await fetch(`${probesOf(hub)}/readyz`)).status === 503, "readyz 503", 6000);
      const { reasons } = (await (await fetch(`${probesOf(hub)}/readyz`)).json()) as { reasons: string[] };
      expect(reasons).toEqual([expect.stringMatching(/^Redis does not answer/)]);
      expect((await healthcheck(stateDir)).code).toBe(1);
      await restarted;
      await waitFor(async () => (await healthcheck(stateDir)).code === 0, "ready again", 30_000);
    },
  );
});
