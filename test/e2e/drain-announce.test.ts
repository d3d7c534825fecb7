import { mkdtempSync, rmSync } from "node:fs";
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

describe("an agent process stopped while its reply is delivered", { timeout: 180_000 }, () => {
  it("announces the run's end once delivery settles, then exits 0", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "hub-drain-announce-"));
    const prefix = testPrefix("drain-announce");
    const redis = new Redis(REDIS_URL);
    cleanups.push(async () => {
      redis.disconnect();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
    });
    const model = await startFakeOpenAI();
    cleanups.push(() => model.close());
    const env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix, HUB_GATEWAY_TOKEN: TOKEN };
    const gatewayPort = await freePort();
    const started = async (roles: string, port: number, gateway: boolean): Promise<HubProcess> => {
      const hub = await startHubProcess({ ...env, ...fakeModelEnv(model), HUB_ROLES: roles }, port, {
        gateway,
      });
      cleanups.push(() => hub.kill());
      return hub;
    };
    const [, agent, delivery] = await Promise.all([
      started("ingress", gatewayPort, true),
      started("agent", await freePort(), false),
      started("delivery", await freePort(), false),
    ]);

    model.script({ text: "an answer that takes a while", chunkSize: 4, delayMs: 100 });
    const client = await GatewayClient.open(gatewayPort, TOKEN);
    cleanups.push(() => client.close());
    expect((await client.request("chat.send", { text: "work", idempotencyKey: "drain-run-1" })).ok).toBe(
      true,
    );
    await waitFor(() => model.requests.length > 0, "the model call", 20_000);
    // Delivery is frozen, so the reply cannot settle; the agent is told to stop while its run still streams.
    delivery.child.kill("SIGSTOP");
    cleanups.push(() => void delivery.child.kill("SIGCONT"));
    agent.child.kill("SIGTERM");
    const status = () => redis.hget(`${prefix}:run:drain-run-1`, "status");
    await waitFor(async () => (await status()) === "completed", "the run's outcome", 30_000);
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
});
