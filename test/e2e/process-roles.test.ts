import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, testPrefix } from "../support/redis.js";

// With the roles split over processes, `hub status` says which process runs which role, and says so when a
// role has no process (its queue would wait while every process left looks healthy).
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("hub status with the roles split", { timeout: 180_000 }, () => {
  it("lists each running process with its roles and names a role no process has, at once after a stop", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "hub-process-roles-"));
    const prefix = testPrefix("process-roles");
    cleanups.push(async () => {
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
    });
    const env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix };
    const port = await freePort();
    const front = await startHubProcess({ ...env, HUB_ROLES: "ingress,delivery" }, port);
    cleanups.push(() => front.kill());
    const status = async () => {
      const run = await runCli(["status", "--json"], { ...env, HUB_GATEWAY_PORT: String(port) }, 30_000);
      return JSON.parse(run.stdout) as { processes: Array<{ roles: string[] }>; missingRoles: string[] };
    };
    expect((await status()).missingRoles).toEqual(["agent"]);
    const agent: HubProcess = await startHubProcess({ ...env, HUB_ROLES: "agent" }, await freePort(), {
      gateway: false,
    });
    cleanups.push(() => agent.kill());
    const both = await status();
    expect(both.processes.map((p) => p.roles)).toEqual([["ingress", "delivery"], ["agent"]]);
    expect(both.missingRoles).toEqual([]);
    await agent.stop();
    expect((await status()).missingRoles).toEqual(["agent"]);
    const text = await runCli(["status"], { ...env, HUB_GATEWAY_PORT: String(port) }, 30_000);
    expect(text.stdout).toContain(
      "no running process has the agent role: the runs queue waits; start one (HUB_ROLES=agent).",
    );
  });
});
