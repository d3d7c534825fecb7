import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RunRecords } from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/src/index.js";
import { GatewayClient } from "../support/gateway-client.js";
import { fakeModelEnv, freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../support/redis.js";

// `agent.threads`: a real `hub start` whose agent role runs on a worker thread. What a user and an operator
// see must be what a hub without threads shows: one answer per message, the runs in /metrics, a drain that
// waits for the thread's run, and a thread that ends by itself started again without losing or doubling.
const TOKEN = "threads-test-token-0123456789";
let model: FakeOpenAI;
let redis: Redis;
const cleanups: Array<() => Promise<void> | void> = [];
beforeAll(async () => {
  model = await startFakeOpenAI();
  redis = new Redis(REDIS_URL);
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await model.close();
  redis.disconnect();
});

async function startThreadedHub(
  name: string,
  extra: Record<string, string> = {},
): Promise<{ hub: HubProcess; client: GatewayClient; port: number; prefix: string }> {
  const prefix = testPrefix(name);
  const stateDir = mkdtempSync(join(tmpdir(), "hub-threads-"));
  const port = await freePort();
  const hub = await startHubProcess(
    {
      HUB_STATE_DIR: stateDir,
      HUB_REDIS_PREFIX: prefix,
      HUB_GATEWAY_TOKEN: TOKEN,
      HUB_AGENT_THREADS: "1",
      ...fakeModelEnv(model),
      ...extra,
    },
    port,
  );
  cleanups.push(async () => {
    if (hub.child.exitCode === null) await hub.kill();
    rmSync(stateDir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });
  const client = await GatewayClient.open(port, TOKEN);
  cleanups.push(() => client.close());
  return { hub, client, port, prefix };
}

/** The value of one sample in a Prometheus text exposition (undefined when absent). */
function sample(text: string, line: string): number | undefined {
  const found = text.split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.split(" ").pop());
}

const logLines = (hub: HubProcess) =>
  hub.output
    .join("")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("the agent role on a worker thread (agent.threads)", { timeout: 120_000 }, () => {
  it("answers once, counts the thread's runs in /metrics, is ready, and its drain waits for the thread's run", async () => {
    const { hub, client, port, prefix } = await startThreadedHub("threads-run");
    expect(
      logLines(hub).some((l) => l.msg === "agent role running on worker threads" && l.threads === 1),
    ).toBe(true);
    model.script({ text: "Answered on a thread." });
    const sent = await client.request("chat.send", { text: "hello thread", idempotencyKey: "thread-run-1" });
    expect(sent.ok).toBe(true);
    expect(await client.terminal("thread-run-1")).toMatchObject({
      state: "final",
      text: "Answered on a thread.",
    });
    // The run's lines come from the thread (each marked), with the run's own fields.
    expect(logLines(hub).some((l) => l.thread === 1 && l.runId === "thread-run-1")).toBe(true);

    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(sample(metrics, 'hub_runs_total{outcome="completed"}')).toBe(1);
    expect(sample(metrics, "hub_model_first_token_seconds_count")).toBe(1);
    expect(sample(metrics, 'hub_inbound_messages_total{channel="webchat",outcome="answered"}')).toBe(1);
    // The process's own figures once (the main thread's), not once per thread.
    expect(metrics.split("\n").filter((l) => l.startsWith("process_cpu_seconds_total ")).length).toBe(1);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);

    // A run in flight on the thread when SIGTERM comes: the drain waits for it, it is answered, exit 0.
    model.script({ text: "slow answer ".repeat(10), chunkSize: 12, delayMs: 150 });
    await client.request("chat.send", { text: "take your time", idempotencyKey: "thread-run-2" });
    await waitFor(
      () => model.requests.some((r) => JSON.stringify(r.messages).includes("take your time")),
      "model",
    );
    hub.child.kill("SIGTERM");
    await hub.exited;
    expect(hub.child.exitCode).toBe(0);
    const draining = logLines(hub).find((l) => l.msg === "draining: no new work is taken");
    expect(draining?.runs).toBe(1);
    expect(await new RunRecords(redis, prefix).get("thread-run-2")).toMatchObject({ status: "completed" });
  });

  it("starts a thread that ended by itself again: every message answered once, none run twice", async () => {
    // The thread exits right after each run's outcome is recorded (a crash in it), before anything else.
    const { hub, client, port } = await startThreadedHub("threads-restart", {
      HUB_FAILPOINTS: "run.after-settle=exit",
    });
    for (const [i, text] of ["first on a thread", "second on a thread"].entries()) {
      model.script({ text: `answer ${i + 1}` });
      const runId = `thread-restart-${i + 1}`;
      expect((await client.request("chat.send", { text, idempotencyKey: runId })).ok).toBe(true);
      // The outcome is recorded before the thread ends: asking again with the key answers it.
      await waitFor(
        async () => {
          const again = await client.request("chat.send", { text, idempotencyKey: runId });
          return (again.payload as { status?: string }).status === "completed";
        },
        `the end of ${runId}`,
        30_000,
      );
      await waitFor(
        () =>
          logLines(hub).filter((l) => String(l.msg).startsWith("an agent thread ended unexpectedly"))
            .length ===
          i + 1,
        "the thread's end to be seen",
        15_000,
      );
    }
    // One model call per message: each request's last message is the one it answers.
    const asked = model.requests.map((r) => JSON.stringify(r.messages.at(-1)));
    for (const text of ["first on a thread", "second on a thread"])
      expect(asked.filter((last) => last.includes(text))).toHaveLength(1);
    const history = await client.request("chat.history", {});
    const messages = (history.payload as { messages: Array<{ role: string; text: string }> }).messages;
    expect(messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "first on a thread"],
      ["assistant", "answer 1"],
      ["user", "second on a thread"],
      ["assistant", "answer 2"],
    ]);
    // Started again after each end, the process is ready (its agent thread takes work).
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
      "ready again",
      15_000,
    );
  });
});
