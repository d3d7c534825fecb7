import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeOpenAI } from "@hub/fakes";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { fakeModelEnv, freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, testPrefix, waitFor } from "../support/redis.js";
import { hasRedisServer, startOwnRedis } from "../support/redis-server.js";

// Every hub process answers probes about itself, whatever its roles: one without the ingress role on its
// health listener (health.host, health.port). The Docker HEALTHCHECK (healthcheck.ts) finds its own process
// among those sharing a state directory.
const HEALTHCHECK = fileURLToPath(new URL("../../apps/hub/src/healthcheck.ts", import.meta.url));
const TOKEN = "role-probes-token-0123456789";
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Runs the health check (as the image does, plus `args`, under `wrapper`); resolves with its exit code and output. */
function healthcheck(
  stateDir: string,
  args: string[] = [],
  wrapper: string[] = [],
): Promise<{ code: number; out: string }> {
  const { HUB_GATEWAY_PORT: _unset, ...env } = process.env;
  const command = [...wrapper, process.execPath, "--import", "tsx", HEALTHCHECK, ...args];
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
  options: { gateway?: boolean; wrapper?: string[] } = {},
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

  it("each process sharing a state dir is probed itself: ready, then draining (not ready), then gone", async () => {
    const { stateDir, prefix } = installation("share");
    const model = await startFakeOpenAI();
    cleanups.push(() => model.close());
    const env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix, HUB_GATEWAY_TOKEN: TOKEN };
    const gatewayPort = await freePort();
    const [ingress, agent, delivery] = await Promise.all([
      startHubProcess({ ...env, ...fakeModelEnv(model), HUB_ROLES: "ingress,delivery" }, gatewayPort),
      started({ ...env, ...fakeModelEnv(model), HUB_ROLES: "agent" }, { gateway: false }),
      started({ ...env, HUB_ROLES: "delivery" }, { gateway: false }),
    ]);
    cleanups.push(() => ingress.kill());
    const pids = [ingress, agent, delivery].map((p) => String(p.child.pid));
    for (const hub of [agent, delivery]) {
      expect((await fetch(`${probesOf(hub)}/healthz`)).status).toBe(200);
      expect(await (await fetch(`${probesOf(hub)}/readyz`)).json()).toEqual({ ready: true, reasons: [] });
    }
    const all = await Promise.all(
      [[], ...pids.map((pid) => ["--pid", pid])].map((a) => healthcheck(stateDir, a)),
    );
    expect(all.map((r) => r.code)).toEqual([0, 0, 0, 0]);

    // A run in flight in the agent process keeps it draining after SIGTERM.
    model.script({ text: "a slow answer ".repeat(20), chunkSize: 4, delayMs: 200 });
    const client = await GatewayClient.open(gatewayPort, TOKEN);
    cleanups.push(() => client.close());
    expect((await client.request("chat.send", { text: "work", idempotencyKey: "probe-run-1" })).ok).toBe(
      true,
    );
    await waitFor(() => model.requests.length > 0, "the model call", 20_000);
    agent.child.kill("SIGTERM");
    await waitFor(async () => (await fetch(`${probesOf(agent)}/readyz`)).status === 503, "agent readyz 503");
    const draining = await Promise.all(
      [[], ...pids.map((pid) => ["--pid", pid])].map((a) => healthcheck(stateDir, a)),
    );
    expect(draining.map((r) => r.code)).toEqual([1, 0, 1, 0]);
    expect(draining[2]?.out).toContain(
      `hub process ${pids[1]} (agent) is not ready: the hub is shutting down`,
    );
    expect(model.requests).toHaveLength(1); // still the same run: the drain was not over yet

    // The run ends, the process exits and takes its record along; the others are still themselves.
    expect(await client.terminal("probe-run-1", 30_000)).toMatchObject({ state: "final" });
    await agent.exited;
    const after = await Promise.all(
      [[], ...pids.map((pid) => ["--pid", pid])].map((a) => healthcheck(stateDir, a)),
    );
    expect(after.map((r) => r.code)).toEqual([0, 0, 1, 0]);
    expect(after[2]?.out).toContain(`no hub process ${pids[1]} is running: none has recorded its address`);
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
      const down = await healthcheck(stateDir);
      expect(down.code).toBe(1);
      expect(down.out).toMatch(/\(delivery\) is not ready: Redis does not answer/);
      await restarted;
      await waitFor(async () => (await healthcheck(stateDir)).code === 0, "ready again", 30_000);
    },
  );
});

/** The host pid of the one child of `pid` (the hub that `unshare --fork` started). */
function childOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(" ")[0]);
}

/** Whether this machine lets the tests start a process in a PID namespace of its own (root on Linux). */
const canUnshare = spawnSync("unshare", ["--pid", "--fork", "true"]).status === 0;
if (!canUnshare) console.warn("skipping the PID namespace probe test: `unshare --pid` is not allowed here");

describe.runIf(canUnshare)("two containers sharing a state dir", { timeout: 180_000 }, () => {
  it("each container's health check probes the process of its own PID namespace only", async () => {
    const { stateDir, prefix } = installation("pidns");
    const env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix };
    const [here, there] = await Promise.all([
      started({ ...env, HUB_ROLES: "agent" }, { gateway: false }),
      // Another "container": a PID namespace of its own, where the hub is pid 1.
      started(
        { ...env, HUB_ROLES: "delivery" },
        { gateway: false, wrapper: ["unshare", "--pid", "--fork", "--kill-child"] },
      ),
    ]);
    const herePid = here.child.pid as number;
    const therePid = childOf(there.child.pid as number);
    const inThere = ["nsenter", "--target", String(therePid), "--pid", "--"];
    expect(readdirSync(join(stateDir, "health"))).toHaveLength(2);
    const both = async () =>
      (await Promise.all([healthcheck(stateDir), healthcheck(stateDir, [], inThere)])).map((r) => r.code);
    expect(await both()).toEqual([0, 0]);
    try {
      process.kill(therePid, "SIGSTOP"); // frozen: its probe gets no answer
      expect(await both()).toEqual([0, 1]);
      process.kill(therePid, "SIGCONT");
      process.kill(herePid, "SIGSTOP");
      const [hereCheck, thereCheck] = await Promise.all([
        healthcheck(stateDir),
        healthcheck(stateDir, [], inThere),
      ]);
      expect([hereCheck.code, thereCheck.code]).toEqual([1, 0]);
      expect(hereCheck.out).toContain(`hub process ${herePid} (agent) is not ready: nothing answers`);
    } finally {
      process.kill(therePid, "SIGCONT");
      process.kill(herePid, "SIGCONT");
    }
  });
});
