import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { recoverInterruptedRuns } from "@hub/agent";
import { createLogger, finalizeInboundContext, type RunRequest } from "@hub/core";
import { FileSessionStore, RunRecords, SessionLane, SessionWriters } from "@hub/sessions";
import { describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { fakeModelEnv, freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { processSuite } from "../support/process-suite.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../support/redis.js";

const TOKEN = "restart-test-token-0123456789";
const LEASE_MS = 1500;
const suite = processSuite();
const { cleanups } = suite;

/** One hub installation (state dir + Redis prefix) that can be started, killed and started again. */
function installation(name: string) {
  const prefix = testPrefix(name);
  const stateDir = mkdtempSync(join(tmpdir(), "hub-restart-"));
  const processes: HubProcess[] = [];
  cleanups.push(async () => {
    for (const p of processes) if (p.child.exitCode === null) await p.kill();
    rmSync(stateDir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });
  const env = {
    HUB_STATE_DIR: stateDir,
    HUB_REDIS_PREFIX: prefix,
    HUB_GATEWAY_TOKEN: TOKEN,
    ...fakeModelEnv(suite.model),
    HUB_LANE_LEASE_MS: String(LEASE_MS),
  };
  return {
    prefix,
    stateDir,
    async start(): Promise<{ hub: HubProcess; client: GatewayClient }> {
      const port = await freePort();
      const hub = await startHubProcess(env, port);
      processes.push(hub);
      const client = await GatewayClient.open(port, TOKEN);
      cleanups.unshift(async () => client.close());
      return { hub, client };
    },
  };
}

const requestsWith = (text: string) =>
  suite.model.requests.filter((r) => JSON.stringify(r.messages).includes(text));

/** Starts a run that hangs in the model, then SIGKILLs the hub mid-run. */
async function crashMidRun(
  inst: ReturnType<typeof installation>,
  text: string,
  runId: string,
): Promise<void> {
  suite.model.script({ text: "this answer never finishes ".repeat(50), chunkSize: 5, delayMs: 200 });
  const { hub, client } = await inst.start();
  const res = await client.request("chat.send", { text, idempotencyKey: runId });
  expect(res.ok).toBe(true);
  await waitFor(() => requestsWith(text).length === 1, "the model call to start");
  await hub.kill();
}

/**
 * The run's end as a client that connected after it sees it: recovery resumes at once while the hub
 * starts, so the final event may be out before the client subscribes; a repeated chat.send answers
 * the recorded result instead.
 */
async function recordedEnd(client: GatewayClient, text: string, runId: string): Promise<unknown> {
  let payload: unknown;
  await waitFor(
    async () => {
      payload = (await client.request("chat.send", { text, idempotencyKey: runId })).payload;
      return (payload as { status: string }).status !== "in_flight";
    },
    `the end of ${runId}`,
    30_000,
  );
  return payload;
}

describe("restart recovery with real processes", () => {
  it("a run interrupted by SIGKILL is resumed once after the restart and answered once", async () => {
    const inst = installation("resume");
    await crashMidRun(inst, "resume me please", "resume-run-0001");
    suite.model.script({ text: "Resumed answer." });
    const { client } = await inst.start();
    expect(await recordedEnd(client, "resume me please", "resume-run-0001")).toMatchObject({
      status: "completed",
      text: "Resumed answer.",
    });
    const calls = requestsWith("resume me please");
    expect(calls).toHaveLength(2);
    expect(JSON.stringify(calls[1]?.messages)).toContain("the hub restarted while you were answering");
    expect(await new RunRecords(suite.redis, inst.prefix).get("resume-run-0001")).toMatchObject({
      status: "completed",
      attempt: 2,
    });
    const history = await client.request("chat.history", {});
    const messages = (history.payload as { messages: Array<{ role: string; text: string }> }).messages;
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[1]?.text).toBe("Resumed answer.");
  }, 60_000);

  it("a resumed run's answer streams to the web chat under the run's own id, not its attempt's reply id", async () => {
    const inst = installation("resume-events");
    await crashMidRun(inst, "stream me again", "resume-run-0002");
    // Long enough to still be streaming once the client below has read the session (and so hears its events).
    const resumed = "Resumed and streamed. ".repeat(20).trim();
    suite.model.script({ text: resumed, chunkSize: 22, delayMs: 150 });
    const { client } = await inst.start();
    await client.request("chat.history", {});
    const end = await client.terminal("resume-run-0002", 30_000);
    expect(end).toMatchObject({ state: "final", text: resumed });
    const events = client.chatEvents();
    expect(events.filter((e) => e.state === "delta").length).toBeGreaterThan(0);
    // Before: the resumed attempt's segments came as `resume-run-0002.2`, a second answer the page left pending.
    expect(new Set(events.map((e) => e.runId))).toEqual(new Set(["resume-run-0002"]));
  }, 60_000);

  it("a run found 6 hours old after the restart is finalized as interrupted: no model call", async () => {
    const inst = installation("stale");
    await crashMidRun(inst, "stale job", "stale-run-0001");
    // The clock moved on: the run started six hours ago.
    await suite.redis.hset(`${inst.prefix}:run:stale-run-0001`, "startedAt", Date.now() - 6 * 3600_000);
    const { client, hub } = await inst.start();
    await waitFor(
      async () =>
        (await new RunRecords(suite.redis, inst.prefix).get("stale-run-0001"))?.status === "interrupted",
      "finalized",
      20_000,
    );
    // Give the lane time to redeliver the request too: it must not call the model.
    await new Promise((r) => setTimeout(r, 3 * LEASE_MS));
    expect(requestsWith("stale job")).toHaveLength(1);
    expect(client.chatEvents("stale-run-0001")).toEqual([]);
    const again = await client.request("chat.send", { text: "stale job", idempotencyKey: "stale-run-0001" });
    expect(again.payload).toMatchObject({ status: "interrupted" });
    expect(hub.output.join("")).toMatch(/interrupted run finalized|stale interrupted run finalized/);
  }, 60_000);

  it("a run 55 seconds old is resumed", async () => {
    const inst = installation("fresh");
    await crashMidRun(inst, "fresh job", "fresh-run-0001");
    await suite.redis.hset(`${inst.prefix}:run:fresh-run-0001`, "startedAt", Date.now() - 55_000);
    suite.model.script({ text: "Fresh answer." });
    const { client } = await inst.start();
    expect(await recordedEnd(client, "fresh job", "fresh-run-0001")).toMatchObject({
      status: "completed",
      text: "Fresh answer.",
    });
    expect(requestsWith("fresh job")).toHaveLength(2);
  }, 60_000);
});

describe("restart recovery scan", () => {
  it("ends a run outside any session lane (a command's answer) left running by a dead process, a minute after its start", async () => {
    const prefix = testPrefix("scan-outside");
    const stateDir = mkdtempSync(join(tmpdir(), "hub-scan-"));
    const logger = createLogger({ level: "silent" });
    const runs = new RunRecords(suite.redis, prefix);
    const sessions = new FileSessionStore(stateDir, logger);
    const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger });
    try {
      const key = webchatRequest("cmd-old", "cmd").ctx.sessionKey;
      await runs.start("cmd-old", key, 600_000, "webchat", { outsideLane: true });
      await suite.redis.hset(`${prefix}:run:cmd-old`, "startedAt", Date.now() - 120_000);
      await runs.start("cmd-new", key, 600_000, "webchat", { outsideLane: true });
      const startedAt = Number(await suite.redis.hget(`${prefix}:run:cmd-new`, "startedAt"));
      // Seen at 59.8 s after the young one's start: ended 0.2 s later, not at once.
      const scanTime = startedAt + 59_800;
      const result = await recoverInterruptedRuns({
        runs,
        sessions,
        lane,
        runTimeoutMs: 600_000,
        logger,
        scanTime,
      });
      expect(result.finalized).toEqual(["cmd-old"]);
      expect(await runs.get("cmd-new")).toMatchObject({ status: "running" });
      await waitFor(
        async () => (await runs.get("cmd-new"))?.status === "interrupted",
        "the young run ended",
        3000,
      );
      expect((await runs.running()).map((r) => r.runId)).toEqual([]);
    } finally {
      await lane.close();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
    }
  });

  it("finalizes only the stale run by its runId; a newer claim of its session and another session's fresh run survive", async () => {
    const prefix = testPrefix("scan");
    const stateDir = mkdtempSync(join(tmpdir(), "hub-scan-"));
    const logger = createLogger({ level: "silent" });
    const runs = new RunRecords(suite.redis, prefix);
    const sessions = new FileSessionStore(stateDir, logger);
    const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger });
    const writers = new SessionWriters(suite.redis, prefix);
    try {
      // A run in flight is the head of its session's lane (no process drains these lanes here).
      const stale = webchatRequest("old-gen", "gen");
      const key = stale.ctx.sessionKey;
      await lane.enqueue(stale);
      await lane.enqueue(webchatRequest("new-gen", "gen"));
      const session = await sessions.resolve(key);
      await runs.start("old-gen", key, 600_000);
      await suite.redis.hset(`${prefix}:run:old-gen`, "startedAt", Date.now() - 6 * 3600_000);
      await writers.claim(key, session.sessionId, "old-gen");
      // A newer claim of the same session (as a superseding run takes it) must survive the finalizing.
      const fresh = await writers.claim(key, session.sessionId, "new-gen");
      const other = webchatRequest("other-run", "other");
      await lane.enqueue(other);
      await runs.start("other-run", other.ctx.sessionKey, 600_000);
      const result = await recoverInterruptedRuns({ runs, sessions, lane, runTimeoutMs: 600_000, logger });
      expect(result.finalized).toEqual(["old-gen"]);
      expect(result.resumable).toEqual(["other-run"]);
      expect(await runs.get("old-gen")).toMatchObject({ status: "interrupted" });
      expect(await runs.get("other-run")).toMatchObject({ status: "running" });
      await writers.assertCurrent(fresh.claim);
    } finally {
      await lane.close();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
    }
  });
});

// A web chat run request from `peer` (its own session).
function webchatRequest(runId: string, peer: string): RunRequest {
  const inbound = { channel: "webchat", messageId: runId, chat: { type: "direct" as const, id: peer } };
  return {
    runId,
    ctx: finalizeInboundContext(
      { ...inbound, sender: { id: peer }, body: runId, timestamp: 1 },
      { agent: { id: "main", dmScope: "per-channel-peer" } },
    ),
  };
}
