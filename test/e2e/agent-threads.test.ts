import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RunRecords } from "@hub/sessions";
import { describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { fakeModelEnv, freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { monitorRedis, type RedisMonitor } from "../support/monitor.js";
import { processSuite } from "../support/process-suite.js";
import { dropPrefix, testPrefix, waitFor } from "../support/redis.js";

// `agent.threads`: a real `hub start` whose agent role runs on a worker thread. What a user and an operator
// see must be what a hub without threads shows: one answer per message, the runs in /metrics, a drain that
// waits for the thread's run, and a thread that ends by itself started again without losing or doubling.
const TOKEN = "threads-test-token-0123456789";
const suite = processSuite();
const { cleanups } = suite;

// `config`: a config file's text (the hub reads it from its state dir).
async function startThreadedHub(
  name: string,
  { config, ...extra }: Record<string, string> = {},
): Promise<{ hub: HubProcess; client: GatewayClient; port: number; prefix: string }> {
  const prefix = testPrefix(name);
  const stateDir = mkdtempSync(join(tmpdir(), "hub-threads-"));
  if (config) writeFileSync(join(stateDir, "hub.json5"), config);
  const port = await freePort();
  const hub = await startHubProcess(
    {
      HUB_STATE_DIR: stateDir,
      HUB_REDIS_PREFIX: prefix,
      HUB_GATEWAY_TOKEN: TOKEN,
      HUB_AGENT_THREADS: "1",
      ...fakeModelEnv(suite.model),
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

// The model calls that answer `text` (their last user message; a resumed run's ends with a note).
const asked = (text: string) =>
  suite.model.requests.filter((r) =>
    JSON.stringify(r.messages.filter((m) => m.role === "user").at(-1)).includes(text),
  );
// How many of the hub's log lines begin with `msg`.
const count = (hub: HubProcess, msg: string) =>
  logLines(hub).filter((l) => String(l.msg).startsWith(msg)).length;

const logLines = (hub: HubProcess) =>
  hub.output
    .join("")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("the agent role on a worker thread (agent.threads)", { timeout: 120_000 }, () => {
  it("answers once, counts the thread's runs in /metrics, is ready, and its drain waits for the thread's run", async () => {
    const { hub, client, port, prefix } = await startThreadedHub("threads-run", {
      config: "{ channels: {} }",
    });
    expect(
      logLines(hub).some((l) => l.msg === "agent role running on worker threads" && l.threads === 1),
    ).toBe(true);
    suite.model.script({ text: "Answered on a thread." });
    const sent = await client.request("chat.send", { text: "hello thread", idempotencyKey: "thread-run-1" });
    expect(sent.ok).toBe(true);
    expect(await client.terminal("thread-run-1")).toMatchObject({
      state: "final",
      text: "Answered on a thread.",
    });
    // The run's lines come from the thread (each marked), with the run's own fields. They reach
    // the process's stdout on their own (the thread writes fd 1), so they may follow the answer.
    await waitFor(
      () => logLines(hub).some((l) => l.thread === 1 && l.runId === "thread-run-1"),
      "the thread's run lines",
    );

    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(sample(metrics, 'hub_runs_total{outcome="completed"}')).toBe(1);
    expect(sample(metrics, "hub_model_first_token_seconds_count")).toBe(1);
    expect(sample(metrics, 'hub_inbound_messages_total{channel="webchat",outcome="answered"}')).toBe(1);
    // The process's own figures once (the main thread's), not once per thread.
    expect(metrics.split("\n").filter((l) => l.startsWith("process_cpu_seconds_total ")).length).toBe(1);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    // SIGHUP reaches the thread: it reads the config file again too.
    hub.child.kill("SIGHUP");
    const reloaded = (l: Record<string, unknown>) => l.msg === "reloaded channel allowlists and policies";
    await waitFor(() => logLines(hub).some((l) => reloaded(l) && l.thread === 1), "the thread's reload");

    // A run in flight on the thread when SIGTERM comes: the drain waits for it, it is answered, exit 0.
    suite.model.script({ text: "slow answer ".repeat(10), chunkSize: 12, delayMs: 150 });
    await client.request("chat.send", { text: "take your time", idempotencyKey: "thread-run-2" });
    await waitFor(
      () => suite.model.requests.some((r) => JSON.stringify(r.messages).includes("take your time")),
      "model",
    );
    hub.child.kill("SIGTERM");
    await hub.exited;
    expect(hub.child.exitCode).toBe(0);
    const draining = logLines(hub).find((l) => l.msg === "draining: no new work is taken");
    expect(draining?.runs).toBe(1);
    expect(await new RunRecords(suite.redis, prefix).get("thread-run-2")).toMatchObject({
      status: "completed",
    });
  });

  it("hands each session to a thread's runner in its admission, and each reply back to the main thread's delivery in its push: no wake-up through Redis, no settlement published", async () => {
    const { client, prefix } = await startThreadedHub("threads-admit", {
      HUB_AGENT_THREADS: "2",
      config: "{ channels: {} }",
    });
    const woken = wokenThroughRedis(await monitorRedis(), prefix);
    for (const [i, chat] of ["one", "two", "three", "four"].entries()) {
      suite.model.script({ text: `answer ${chat}` });
      const params = { sessionKey: `agent:main:webchat:direct:${chat}`, text: `ask ${chat}` };
      const idempotencyKey = `thread-admit-${i}`;
      expect((await client.request("chat.send", { ...params, idempotencyKey })).ok).toBe(true);
      expect(await client.terminal(idempotencyKey)).toMatchObject({ state: "final", text: `answer ${chat}` });
      expect(asked(`ask ${chat}`)).toHaveLength(1);
    }
    // Four sessions over two idle threads: each claimed for a thread's runner in the main thread's admission
    // (which has no runner of its own: without that claim every one would have been woken through the lane's
    // ready list), and each reply's target claimed for the main thread's delivery in the thread's push (which
    // cannot deliver: without that claim each target would have been woken through delivery's ready list).
    expect(woken.runs).toEqual([]);
    expect(woken.replies).toEqual([]);
    // Each run waits for its reply's settlement, which the main thread's delivery told its thread in memory.
    expect(woken.settled).toEqual([]);
  });

  it("keeps each session's messages in order when they arrive at once: two threads, messages sent without waiting", async () => {
    const { client } = await startThreadedHub("threads-order", {
      HUB_AGENT_THREADS: "2",
      config: '{ channels: {}, agent: { queueMode: "followup" } }',
    });
    const sessions = Array.from({ length: 24 }, (_, i) => `agent:main:webchat:direct:order-${i}`);
    // Eight sessions' A and B at a time (a connection has at most 32 requests in flight).
    for (let from = 0; from < sessions.length; from += 8) {
      const sends = sessions.slice(from, from + 8).flatMap((sessionKey, j) =>
        ["A", "B"].map((m) => {
          const i = from + j;
          return client.request("chat.send", {
            sessionKey,
            text: `ordered ${m}-${i}`,
            idempotencyKey: `order-${m}-${i}`,
          });
        }),
      );
      const answers = await Promise.all(sends);
      expect(answers.filter((answer) => !answer.ok)).toEqual([]);
    }
    // The model calls for these messages (the suite's fake model also has the other tests' calls), each
    // named by its message: "A-3", "B-3", ...
    const turns = () =>
      suite.model.requests.flatMap((r) => {
        const text = JSON.stringify(r.messages.filter((m) => m.role === "user").at(-1));
        return /ordered ([AB]-\d+)/.exec(text)?.[1] ?? [];
      });
    await waitFor(() => turns().length === 2 * sessions.length, "every message's model call", 60_000);
    // Each session's B after its A (followup: one run each, in arrival order).
    const order = turns();
    const reversed = sessions.filter((_, i) => order.indexOf(`B-${i}`) < order.indexOf(`A-${i}`));
    expect(reversed).toEqual([]);
  });

  it("starts a thread that ended by itself again: not ready meanwhile, every message answered once, none run twice", async () => {
    // The thread exits right after each run's outcome is recorded (a crash in it), before anything else.
    const { hub, client, port } = await startThreadedHub("threads-restart", {
      HUB_FAILPOINTS: "run.after-settle=exit",
    });
    for (const [i, text] of ["first on a thread", "second on a thread"].entries()) {
      suite.model.script({ text: `answer ${i + 1}` });
      const runId = `thread-restart-${i + 1}`;
      expect((await client.request("chat.send", { text, idempotencyKey: runId })).ok).toBe(true);
      // The outcome is recorded before the thread ends: asking again with the key answers it.
      await waitFor(
        async () => (await statusOf(client, { text, idempotencyKey: runId })) === "completed",
        runId,
      );
      await waitFor(() => count(hub, "an agent thread ended unexpectedly") === i + 1, "the thread's end");
      // Not ready while the thread is down (it is started again a second later), ready once it is back.
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
      await waitFor(() => count(hub, "agent thread started again") === i + 1, "the restart", 30_000);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    }
    for (const text of ["first on a thread", "second on a thread"]) expect(asked(text)).toHaveLength(1);
    const history = await client.request("chat.history", {});
    const messages = (history.payload as { messages: Array<{ role: string; text: string }> }).messages;
    expect(messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "first on a thread"],
      ["assistant", "answer 1"],
      ["user", "second on a thread"],
      ["assistant", "answer 2"],
    ]);
  });

  it("wakes a session through Redis while its thread is down: the thread started again runs it", async () => {
    const { hub, client, prefix } = await startThreadedHub("threads-admit-down", {
      HUB_FAILPOINTS: "run.after-settle=exit@1",
    });
    const woken = wokenThroughRedis(await monitorRedis(), prefix);
    suite.model.script({ text: "before the end" });
    expect((await client.request("chat.send", { text: "end it", idempotencyKey: "admit-down-1" })).ok).toBe(
      true,
    );
    await waitFor(() => count(hub, "an agent thread ended unexpectedly") === 1, "the thread's end");
    // The thread is started again a second later: this message is admitted (and accepted) meanwhile.
    suite.model.script({ text: "after the restart" });
    const other = { sessionKey: "agent:main:webchat:direct:other", text: "while it is down" };
    expect((await client.request("chat.send", { ...other, idempotencyKey: "admit-down-2" })).ok).toBe(true);
    expect(count(hub, "agent thread started again")).toBe(0);
    // MONITOR's copy of the wake-up can reach this test after chat.send's answer does.
    await waitFor(() => woken.runs.length > 0, "the wake-up through Redis", 5_000);
    expect(woken.runs).toEqual([other.sessionKey]);
    // Its outcome is recorded before the thread ends again (the failpoint is per thread): ask with the key.
    await waitFor(
      async () => (await statusOf(client, { ...other, idempotencyKey: "admit-down-2" })) === "completed",
      "the run after the restart",
      30_000,
    );
    expect(count(hub, "agent thread started again")).toBe(1);
    expect(asked("while it is down")).toHaveLength(1);
  });

  it("stops at once when SIGTERM comes while a thread is about to start again", async () => {
    const { hub, client } = await startThreadedHub("threads-stop-restart", {
      HUB_FAILPOINTS: "run.after-settle=exit",
    });
    suite.model.script({ text: "last words" });
    await client.request("chat.send", { text: "end the thread", idempotencyKey: "thread-stop-1" });
    await waitFor(() => count(hub, "an agent thread ended unexpectedly") === 1, "the thread's end");
    const signalled = Date.now();
    hub.child.kill("SIGTERM");
    await hub.exited;
    expect(hub.child.exitCode).toBe(0);
    // No drain budget spent waiting (the thread takes no work while it is down), and it was not started again.
    expect(Date.now() - signalled).toBeLessThan(10_000);
    expect(count(hub, "agent thread started again")).toBe(0);
    expect(count(hub, "stopped")).toBe(1);
  });

  it("keeps a thread's counts when it ends: /metrics never goes back", async () => {
    // Each thread exits at its second run's settle: the first run is counted (and scraped) while it runs.
    const { hub, client, port } = await startThreadedHub("threads-counts", {
      HUB_FAILPOINTS: "run.after-settle=exit@2",
    });
    const completed = async () =>
      sample(
        await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(),
        'hub_runs_total{outcome="completed"}',
      );
    const answered = async (text: string, idempotencyKey: string) => {
      suite.model.script({ text: `answer to ${text}` });
      expect((await client.request("chat.send", { text, idempotencyKey })).ok).toBe(true);
      await waitFor(
        async () => (await statusOf(client, { text, idempotencyKey })) === "completed",
        idempotencyKey,
      );
    };
    await answered("count one", "thread-count-1");
    // The run's status is in Redis (its settle) a moment before the thread counts it: wait for the count.
    await waitFor(async () => (await completed()) === 1, "the first run counted");
    expect(await completed()).toBe(1);
    await answered("count two", "thread-count-2");
    await waitFor(() => count(hub, "agent thread started again") === 1, "the restart", 30_000);
    // What the ended thread had counted when last scraped stays in the total (a run it ended after that
    // scrape is not counted: its count went with it).
    expect(await completed()).toBeGreaterThanOrEqual(1);
    await answered("count three", "thread-count-3");
    await waitFor(async () => ((await completed()) ?? 0) >= 2, "the third run counted");
    expect(await completed()).toBeGreaterThanOrEqual(2);
  });

  it("a thread started again leaves a live sibling's session alone: the sibling's run calls the model once", async () => {
    // Two threads of one run each: the slow run holds one, the quick run goes to the other, which exits after
    // it; its replacement starts (and takes over dead predecessors' sessions) while the slow run goes on.
    const { hub, client } = await startThreadedHub("threads-sibling", {
      HUB_AGENT_THREADS: "2",
      HUB_FAILPOINTS: "run.after-settle=exit",
      config: "{ agent: { maxConcurrentRuns: 1 } }",
    });
    const slow = {
      sessionKey: "agent:main:webchat:direct:slow",
      text: "slow one",
      idempotencyKey: "sibling-slow",
    };
    const quick = {
      sessionKey: "agent:main:webchat:direct:quick",
      text: "quick one",
      idempotencyKey: "sibling-quick",
    };
    suite.model.script({ text: "slow sibling answer ".repeat(8), chunkSize: 20, delayMs: 1000 });
    expect((await client.request("chat.send", slow)).ok).toBe(true);
    await waitFor(() => asked("slow one").length === 1, "the slow run's model call");
    suite.model.script({ text: "quick answer" });
    expect((await client.request("chat.send", quick)).ok).toBe(true);
    await waitFor(
      () => count(hub, "agent thread started again") === 1,
      "the quick run's thread back",
      30_000,
    );
    await waitFor(async () => (await statusOf(client, slow)) === "completed", "the slow run's end", 30_000);
    expect(asked("slow one")).toHaveLength(1);
    expect(asked("quick one")).toHaveLength(1);
    // Nothing of the live thread's was taken for a dead predecessor's.
    expect(count(hub, "took over keys whose drainer died")).toBe(0);
    expect(count(hub, "run resumed after an interruption")).toBe(0);
  });
});

// The keys put on the session lane's and delivery's ready lists (sessions and reply targets woken through
// Redis for a worker to claim), and the replies' settlements published through Redis (for a waiter on
// another thread or process), while `monitor` watches.
function wokenThroughRedis(
  monitor: RedisMonitor,
  prefix: string,
): { runs: string[]; replies: string[]; settled: string[] } {
  cleanups.push(() => monitor.disconnect());
  const woken = { runs: [] as string[], replies: [] as string[], settled: [] as string[] };
  monitor.on("monitor", (_time, [command, key, ...values]) => {
    if (command?.toLowerCase() === "publish" && key === `${prefix}:mb:reply:settled`)
      woken.settled.push(values[0] ?? "");
    if (command?.toLowerCase() !== "rpush") return;
    if (key === `${prefix}:mb:runs:ready`) woken.runs.push(...values);
    if (key === `${prefix}:mb:reply:ready`) woken.replies.push(...values);
  });
  return woken;
}

// A chat.send repeated with its idempotency key: the run's recorded status.
async function statusOf(client: GatewayClient, params: Record<string, string>): Promise<string | undefined> {
  return ((await client.request("chat.send", params)).payload as { status?: string }).status;
}
