import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@hub/core";
import { type FakeOpenAI, startFakeOpenAI } from "@hub/fakes";
import { RedisSessionStore } from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { fakeModelEnv, freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, REDIS_URL, testPrefix } from "../support/redis.js";

// Processes on different machines share nothing but Redis: each here has its own state directory, and
// `sessions.store: "redis"` (HUB_SESSIONS_STORE) keeps transcripts and session indexes in Redis.
const prefix = testPrefix("redis-sessions");
const dirs = ["ingress", "agent-a", "agent-b"].map((n) => mkdtempSync(join(tmpdir(), `hub-rs-${n}-`)));
const processes: HubProcess[] = [];
let model: FakeOpenAI;
beforeAll(async () => {
  model = await startFakeOpenAI();
});
afterAll(async () => {
  for (const p of processes) await p.stop();
  await model.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await dropPrefix(prefix);
});

const sessionKey = "agent:main:webchat:direct:redis-sessions";
const token = "redis-sessions-token-0123456789";
const envOf = (stateDir: string, roles: string) => ({
  HUB_STATE_DIR: stateDir,
  HUB_REDIS_PREFIX: prefix,
  HUB_GATEWAY_TOKEN: token,
  HUB_SESSIONS_STORE: "redis",
  HUB_LANE_LEASE_MS: "2000",
  HUB_ROLES: roles,
  ...fakeModelEnv(model),
});
const userTexts = (i: number) =>
  (model.requests[i]?.messages ?? []).filter((m) => m.role === "user").map((m) => String(m.content));

describe('sessions.store: "redis"', () => {
  it("an agent process with its own state dir continues the history another one wrote", async () => {
    const port = await freePort();
    processes.push(await startHubProcess(envOf(dirs[0]!, "ingress,delivery"), port));
    const agentA = await startHubProcess(envOf(dirs[1]!, "agent"), await freePort(), { gateway: false });
    const client = await GatewayClient.open(port, token);
    const send = async (runId: string, text: string) => {
      expect((await client.request("chat.send", { sessionKey, text, idempotencyKey: runId })).ok).toBe(true);
      expect(await client.terminal(runId, 30_000)).toMatchObject({ state: "final" });
    };
    await send("redis-sessions-run-1", "my name is Ada");
    await agentA.stop();

    const agentB = await startHubProcess(envOf(dirs[2]!, "agent"), await freePort(), { gateway: false });
    processes.push(agentB);
    await send("redis-sessions-run-2", "what is my name?");
    // The second run, in the other process, sent the model the first exchange from the shared store.
    expect(model.requests).toHaveLength(2);
    expect(userTexts(1)).toEqual(expect.arrayContaining(["my name is Ada", "what is my name?"]));
    expect(model.requests[1]?.messages.some((m) => m.role === "assistant")).toBe(true);

    // No transcript or index touched any state dir; all of it is in Redis, one session, both runs.
    for (const d of dirs)
      expect(readdirSync(d).filter((n) => n === "transcripts" || n === "sessions")).toEqual([]);
    const redis = new Redis(REDIS_URL);
    try {
      const store = new RedisSessionStore(redis, prefix, createLogger({ level: "silent" }));
      expect((await store.list()).map((s) => s.sessionKey)).toEqual([sessionKey]);
      const record = await store.get(sessionKey);
      const entries = await store.read(record!.sessionId);
      const outcomes = entries.flatMap((e) => (e.type === "outcome" ? [e.runId] : []));
      expect(outcomes).toEqual(["redis-sessions-run-1", "redis-sessions-run-2"]);
    } finally {
      redis.disconnect();
    }
    client.close();
  }, 90_000);
});
