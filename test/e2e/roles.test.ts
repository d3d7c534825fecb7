import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { offlineAnswer } from "@hub/agent";
import { afterAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, testPrefix } from "../support/redis.js";

const prefix = testPrefix("roles");
const stateDir = mkdtempSync(join(tmpdir(), "hub-roles-"));
const processes: HubProcess[] = [];
afterAll(async () => {
  for (const p of processes) await p.stop();
  rmSync(stateDir, { recursive: true, force: true });
  await dropPrefix(prefix);
});

describe("roles in separate processes", () => {
  it("ingress in one process, agent and delivery in two others: answers arrive in order, once", async () => {
    const token = "roles-test-token-0123456789";
    const env = {
      HUB_STATE_DIR: stateDir,
      HUB_REDIS_PREFIX: prefix,
      HUB_GATEWAY_TOKEN: token,
      HUB_LANE_LEASE_MS: "2000",
    };
    const port = await freePort();
    processes.push(await startHubProcess({ ...env, HUB_ROLES: "ingress" }, port));
    processes.push(
      await startHubProcess({ ...env, HUB_ROLES: "agent" }, await freePort(), { gateway: false }),
    );
    processes.push(
      await startHubProcess({ ...env, HUB_ROLES: "delivery" }, await freePort(), { gateway: false }),
    );
    const client = await GatewayClient.open(port, token);
    const runs = Array.from({ length: 5 }, (_, i) => `roles-run-${i}-000`);
    for (const [i, runId] of runs.entries()) {
      const res = await client.request("chat.send", {
        sessionKey: "agent:main:webchat:direct:roles",
        text: `message ${i}`,
        idempotencyKey: runId,
      });
      expect(res.ok).toBe(true);
    }
    for (const [i, runId] of runs.entries()) {
      expect(await client.terminal(runId, 30_000)).toMatchObject({
        state: "final",
        text: offlineAnswer(`message ${i}`),
      });
    }
    // One session, in order: each run's events all come before the next run's.
    const order = client.chatEvents().map((e) => e.runId);
    const firstSeen = runs.map((r) => order.indexOf(r));
    const lastSeen = runs.map((r) => order.lastIndexOf(r));
    for (let i = 1; i < runs.length; i++) expect(firstSeen[i]!).toBeGreaterThan(lastSeen[i - 1]!);
    const history = await client.request("chat.history", { sessionKey: "agent:main:webchat:direct:roles" });
    const messages = (history.payload as { messages: Array<{ role: string; text: string }> }).messages;
    expect(messages.filter((m) => m.role === "assistant")).toHaveLength(5);
    client.close();
  }, 60_000);
});
