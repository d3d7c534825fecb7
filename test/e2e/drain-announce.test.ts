import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI } from "@hub/fakes";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { fakeModelEnv, freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../support/redis.js";

// A run's end (the web chat's `final` event) is announced once its reply settles, after the run itself is
// over. An agent process told to stop in between must announce it before it exits: it used to close Redis
// under the wait, and the client never heard that its run had ended (CI saw it once in role-probes).
const TOKEN = "drain-announce-token-0123456789";
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Ingress, agent and delivery in three processes; the agent's own config file gets `agentConfig`. */
async function threeRoles(name: string, agentConfig: Record<string, unknown> = {}) {
  const stateDir = mkdtempSync(join(tmpdir(), "hub-drain-announce-"));
  const prefix = testPrefix(name);
  const redis = new Redis(REDIS_URL);
  cleanups.push(async () => {
    redis.disconnect();
    rmSync(stateDir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });
  const model = await startFakeOpenAI();
  cleanups.push(() => model.close());
  const agentConfigFile = join(stateDir, "agent.json5");
  writeFileSync(agentConfigFile, JSON.stringify(agentConfig));
  const env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix, HUB_GATEWAY_TOKEN: TOKEN };
  const gatewayPort = await freePort();
  const started = async (
    roles: string,
    port: number,
    gateway: boolean,
    more: Record<string, string> = {},
  ): Promise<HubProcess> => {
    const hub = await startHubProcess({ ...env, ...fakeModelEnv(model), HUB_ROLES: roles, ...more }, port, {
      gateway,
    });
    cleanups.push(() => hub.kill());
    return hub;
  };
  const [, agent, delivery] = await Promise.all([
    started("ingress", gatewayPort, true),
    started("agent", await freePort(), false, { HUB_CONFIG: agentConfigFile }),
    started("delivery", await freePort(), false),
  ]);
  const client = await GatewayClient.open(gatewayPort, TOKEN);
  cleanups.push(() => client.close());
  const status = (runId: string) => redis.hget(`${prefix}:run:${runId}`, "status");
  return { model, agent, delivery, client, status };
}

describe("an agent process stopped while its reply is delivered", { timeout: 180_000 }, () => {
  it("announces the run's end once delivery settles, then exits 0", async () => {
    const { model, agent, delivery, client, status } = await threeRoles("drain-announce");
    model.script({ text: "an answer that takes a while", chunkSize: 4, delayMs: 100 });
    expect((await client.request("chat.send", { text: "work", idempotencyKey: "drain-run-1" })).ok).toBe(
      true,
    );
    await waitFor(() => model.requests.length > 0, "the model call", 20_000);
    // Delivery is frozen, so the reply cannot settle; the agent is told to stop while its run still streams.
    delivery.child.kill("SIGSTOP");
    cleanups.push(() => void delivery.child.kill("SIGCONT"));
    agent.child.kill("SIGTERM");
    await waitFor(async () => (await status("drain-run-1")) === "completed", "the run's outcome", 30_000);
    // The run is over and its reply queued whole; the agent process waits for the reply to settle.
    await new Promise((r) => setTimeout(r, 1000));
    expect(agent.child.exitCode).toBeNull();
    expect(client.chatEvents("drain-run-1").filter((e) => e.state !== "delta")).toEqual([]);

    delivery.child.kill("SIGCONT");
    expect(await client.terminal("drain-run-1", 20_000)).toMatchObject({
      state: "final",
      text: "an answer that takes a while",
    });
    await agent.exited;
    expect(agent.child.exitCode).toBe(0);
  });

  it("with its drain budget spent, announces the ends before the stop gives up, even behind a run that hangs", async () => {
    // No drain budget: the stop is given 5 s. A hanging run holds the runs' worker (and what is stopped after
    // it) past that; the end of a run already over must be announced all the same.
    const { model, agent, delivery, client, status } = await threeRoles("drain-announce-spent", {
      lifecycle: { drainSeconds: 0 },
    });
    model.script({ text: "an answer nobody delivers yet" }, { hang: true });
    // Delivery is frozen throughout: the first reply never settles.
    delivery.child.kill("SIGSTOP");
    cleanups.push(() => void delivery.child.kill("SIGCONT"));
    expect((await client.request("chat.send", { text: "one", idempotencyKey: "drain-run-2" })).ok).toBe(true);
    await waitFor(
      async () => (await status("drain-run-2")) === "completed",
      "the first run's outcome",
      30_000,
    );
    expect((await client.request("chat.send", { text: "two", idempotencyKey: "drain-run-3" })).ok).toBe(true);
    await waitFor(() => model.requests.length > 1, "the hanging model call", 20_000);
    agent.child.kill("SIGTERM");
    expect(await client.terminal("drain-run-2", 15_000)).toMatchObject({
      state: "final",
      text: "an answer nobody delivers yet",
    });
    await agent.exited;
    expect(agent.child.exitCode).toBe(0);
    expect(agent.output.join("")).toContain("the hub stops before the reply settled");
  });
});
