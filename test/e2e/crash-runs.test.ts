import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "@hub/core";
import { FileSessionStore, writerGeneration } from "@hub/sessions";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeOpenAI,
  type FakeReplyScript,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { fakeModelEnv, freePort } from "../support/hub-process.js";
import { type Installation, installation } from "../support/installation.js";
import { REDIS_URL, waitFor } from "../support/redis.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";

// Runs that lose their claim, Redis losing its data, and recovery time (issue 9, items 6, 8, 10),
// with real hub processes frozen (SIGSTOP) or killed (SIGKILL) at the exact step.
let model: FakeOpenAI;
const installs: Installation[] = [];
// A fresh model per test: scripts a failed test left unconsumed never shift the next test's answers.
beforeEach(async () => {
  model = await startFakeOpenAI();
});
afterEach(async () => {
  for (const i of installs.splice(0)) await i.dispose();
  await model.close();
});

const modelEnv = () => fakeModelEnv(model);
const modelCallsWith = (text: string) =>
  model.requests.filter((r) => JSON.stringify(r.messages).includes(text)).length;

function make(
  name: string,
  options: { env?: Record<string, string>; prefix?: string; config?: Record<string, unknown> } = {},
) {
  const inst = installation(name, {
    env: { ...modelEnv(), HUB_LANE_LEASE_MS: "1500", ...options.env },
    ...(options.prefix ? { prefix: options.prefix } : {}),
    ...(options.config ? { config: options.config } : {}),
  });
  installs.push(inst);
  return inst;
}

const paragraphs = (tag: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${tag} paragraph ${i}.`).join("\n\n");

type History = { messages: Array<{ role: string; text: string }> };

// Recovery runs while the hub starts, so the answer may be out before a client connects: read the record.
async function resumedRunCompleted(inst: Installation, runId: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    await waitFor(
      async () => (await redis.hget(`${inst.prefix}:run:${runId}`, "status")) === "completed",
      "the resumed run to complete",
      20_000,
    );
  } finally {
    redis.disconnect();
  }
}

// A run frozen (SIGSTOP) at `failpoint` in process A, finished by process B once A's lease runs out, then
// (after `meanwhile`, given B) A woken: what A does late is what the caller checks. Returns B.
async function frozenThenTakenOver(
  inst: Installation,
  failpoint: string,
  text: string,
  runId: string,
  meanwhile?: (b: Awaited<ReturnType<Installation["start"]>>) => Promise<void>,
) {
  const a = await inst.start({ failpoints: `${failpoint}=stop@1` });
  a.client!.request("chat.send", { text, idempotencyKey: runId }).catch(() => {});
  await a.hub.waitForOutput(new RegExp(`failpoint ${failpoint.replace(".", "\\.")}: stop`));
  const b = await inst.start();
  await resumedRunCompleted(inst, runId);
  await meanwhile?.(b);
  a.hub.resume();
  await new Promise((r) => setTimeout(r, 2000));
  return b;
}

describe("a run that lost its claim changes nothing", () => {
  it("a frozen run resumed elsewhere pushes no segment after it wakes", async () => {
    const inst = make("fence-reply");
    model.script(
      { text: paragraphs("Old", 12), chunkSize: 6, delayMs: 30 },
      { text: paragraphs("New", 3), chunkSize: 50 },
    );
    const a = await inst.start({ failpoints: "run.before-push=stop@2" });
    await a.client!.request("chat.send", { text: "fence my reply", idempotencyKey: "fence-run-0001" });
    await a.hub.waitForOutput(/failpoint run\.before-push: stop/);
    // A second process of the same installation takes the session over once A's lease runs out.
    const b = await inst.start();
    await b.client!.request("chat.history", {});
    expect(await b.client!.terminal("fence-run-0001", 30_000)).toMatchObject({ state: "final" });
    a.hub.resume();
    await new Promise((r) => setTimeout(r, 3000));
    const deltas = b.client!.chatEvents().filter((e) => e.state === "delta");
    // Every part under the run's own id, whichever attempt sent it (the attempts told apart by their words).
    expect(new Set(deltas.map((e) => e.runId))).toEqual(new Set(["fence-run-0001"]));
    const firstNew = deltas.findIndex((e) => e.text.includes("New paragraph"));
    expect(firstNew).toBeGreaterThanOrEqual(0);
    // Nothing of the old attempt after the new attempt started answering, and never its frozen block.
    expect(deltas.slice(firstNew).filter((e) => e.text.includes("Old paragraph"))).toEqual([]);
    expect(deltas.filter((e) => e.text.includes("Old paragraph 1."))).toEqual([]);
  }, 60_000);

  it("a frozen run's late transcript append is ignored by every reader", async () => {
    // The 2nd append is the old attempt's answer with its outcome, written by its settle once its last
    // block's push passed the writer fence (and staged the answer): frozen right before the write. The
    // resumed attempt finishes the run with that staged answer (no model call): it is read back once.
    const old = "The old attempt's answer.";
    await lateAppendIgnored("fence-transcript", "fence-run-0002", { text: old }, old);
  }, 60_000);

  it("a frozen run's late tool step, checked before the freeze, is ignored by every reader", async () => {
    // The 2nd append is the old attempt's tool step: frozen between its claim check and the write.
    const old = { text: "The old attempt's step.", toolCalls: [{ name: "current_time", arguments: "{}" }] };
    await lateAppendIgnored("fence-step", "fence-run-0003", old, "The new attempt's answer.");
  }, 60_000);
});

// A run frozen at its 2nd transcript append (what that is depends on `old`, the first attempt's model
// answer) and resumed by a second process, which ends it with `answer`: after it wakes, no reader sees
// what it wrote late. A short
// delivery lease: what the old attempt pushed before the freeze is delivered by the second process (and
// the new answer after it, in order) once the frozen process's drain of the chat runs out.
async function lateAppendIgnored(
  name: string,
  runId: string,
  old: FakeReplyScript,
  answer: string,
): Promise<void> {
  const inst = make(name, { config: { delivery: { leaseMs: 1500 } } });
  model.script(old, { text: "The new attempt's answer." });
  const a = await inst.start({ failpoints: "transcript.before-append=stop@2" });
  await a.client!.request("chat.send", { text: `fence ${name}`, idempotencyKey: runId });
  await a.hub.waitForOutput(/failpoint transcript\.before-append: stop/);
  const b = await inst.start();
  await b.client!.request("chat.history", {});
  expect(await b.client!.terminal(runId, 30_000)).toMatchObject({ state: "final", text: answer });
  a.hub.resume();
  await new Promise((r) => setTimeout(r, 2000));
  const history = (await b.client!.request("chat.history", {})).payload as History;
  expect(history.messages.filter((m) => m.role === "assistant").map((m) => m.text)).toEqual([answer]);
}

// Each crash below in both layouts: the agent role on the main thread, and on an agent thread (agent.threads),
// where admission claims the session for the thread's runner and the thread's reply push claims the reply's
// target for the main thread's delivery: what a crash there leaves behind is claimed across threads.
const LAYOUTS = [
  ["", 0],
  [" (the agent role on an agent thread)", 1],
] as const;
const threaded = (threads: number, config: Record<string, unknown> = {}) => ({
  ...config,
  agent: { ...(config.agent as Record<string, unknown> | undefined), threads },
});

describe.each(LAYOUTS)("a run killed before its first transcript write%s", (_, threads) => {
  it("resumes with the user's message in the transcript: answered once, the question kept for later turns", async () => {
    const inst = make(`hold-crash-${threads}`, { config: threaded(threads) });
    model.script({ text: "The answer after the crash." });
    // The 1st append is the run's writer line with the user's message: killed right before it.
    const a = await inst.start({ failpoints: "transcript.before-append=kill@1" });
    // The run may start (and die) before the ACK of chat.send is out: the answer is not awaited.
    a.client!.request("chat.send", { text: "remember this question", idempotencyKey: "hold-run-0001" }).catch(
      () => {},
    );
    await a.hub.waitForOutput(/failpoint transcript\.before-append: kill/);
    const b = await inst.start();
    await resumedRunCompleted(inst, "hold-run-0001");
    const history = (await b.client!.request("chat.history", {})).payload as History;
    expect(history.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "remember this question"],
      ["assistant", "The answer after the crash."],
    ]);
  }, 60_000);
});

describe("a run frozen before its first transcript write", () => {
  it("woken after another process answered it and the next message: its late question is read by no one", async () => {
    const inst = make("hold-freeze");
    model.script({ text: "The answer, by the second process." }, { text: "The next answer." });
    // The 1st append is the run's writer line with the user's message: frozen right before it. Woken after
    // the second process answered, its writer line and question land after that process's lines.
    const b = await frozenThenTakenOver(
      inst,
      "transcript.before-append",
      "the frozen question",
      "hold-run-0002",
    );
    await b.client!.request("chat.send", { text: "the next question", idempotencyKey: "hold-run-0003" });
    expect(await b.client!.terminal("hold-run-0003", 30_000)).toMatchObject({ state: "final" });
    const history = (await b.client!.request("chat.history", {})).payload as History;
    expect(history.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "the frozen question"],
      ["assistant", "The answer, by the second process."],
      ["user", "the next question"],
      ["assistant", "The next answer."],
    ]);
    // The frozen run's late claim line is in the file, after the second process's newer one.
    const session = await new FileSessionStore(inst.stateDir, createLogger({ level: "silent" })).get(
      "agent:main:webchat:direct:owner",
    );
    const raw = readFileSync(join(inst.stateDir, "transcripts", `${session?.sessionId}.jsonl`), "utf8");
    const claims = raw
      .split("\n")
      .filter((line) => line.includes('"type":"writer"') && line.includes("hold-run-0002"))
      .map((line) => writerGeneration(JSON.parse(line).writer) ?? 0);
    expect(claims.length).toBeGreaterThanOrEqual(2);
    expect(claims.at(-1)).toBeLessThan(Math.max(...claims));
    // The next run's model call saw the frozen question once.
    const last = model.requests.at(-1);
    expect(JSON.stringify(last?.messages).split("the frozen question").length - 1).toBe(1);
  }, 60_000);
});

describe("a run frozen before its first transcript write, and /new before it wakes", () => {
  it("writes into the new transcript when it wakes, and no reader of it sees that", async () => {
    const inst = make("hold-freeze-new");
    model.script({ text: "The answer, by the second process." }, { text: "The first answer anew." });
    const b = await frozenThenTakenOver(
      inst,
      "transcript.before-append",
      "the frozen question",
      "hold-run-0004",
      async (b) => {
        await b.client!.request("chat.send", { text: "/new", idempotencyKey: "hold-new-0001" });
        expect(await b.client!.terminal("hold-new-0001", 30_000)).toMatchObject({ state: "final" });
      },
    );
    await b.client!.request("chat.send", { text: "a question anew", idempotencyKey: "hold-run-0005" });
    expect(await b.client!.terminal("hold-run-0005", 30_000)).toMatchObject({ state: "final" });
    const history = (await b.client!.request("chat.history", {})).payload as History;
    expect(history.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "a question anew"],
      ["assistant", "The first answer anew."],
    ]);
    expect(JSON.stringify(model.requests.at(-1)?.messages)).not.toContain("the frozen question");
  }, 60_000);
});

// The answer and outcome lines of `runId` in `sessionKey`'s transcript file, as [type, text or status].
async function answerLines(inst: Installation, sessionKey: string, runId: string) {
  const store = new FileSessionStore(inst.stateDir, createLogger({ level: "silent" }));
  const session = await store.get(sessionKey);
  const lines = session ? await store.read(session.sessionId) : [];
  return lines.flatMap((e) =>
    e.type === "assistant" && e.runId === runId
      ? [[e.type, e.text]]
      : e.type === "outcome" && e.runId === runId
        ? [[e.type, e.status]]
        : [],
  );
}

describe.each(LAYOUTS)(
  "a run killed after its settle's transcript write, before the settle's step%s",
  (_, threads) => {
    it("is finished from its staged answer after the restart: one model call, the answer in the history once", async () => {
      const inst = make(`written-crash-${threads}`, { config: threaded(threads) });
      const answer = "Written and queued, not yet settled.";
      model.script({ text: answer }, { text: "A second answer, which no model call is made for." });
      const a = await inst.start({ failpoints: "run.before-settle=kill@1" });
      a.client!.request("chat.send", { text: "answer me once", idempotencyKey: "written-run-0001" }).catch(
        () => {},
      );
      await a.hub.waitForOutput(/failpoint run\.before-settle: kill/);
      await a.hub.exited;
      // Killed after the settle's write: the transcript has the answer and its outcome already.
      expect(await answerLines(inst, "agent:main:webchat:direct:owner", "written-run-0001")).toEqual([
        ["assistant", answer],
        ["outcome", "completed"],
      ]);
      const b = await inst.start();
      await resumedRunCompleted(inst, "written-run-0001");
      expect(model.requests).toHaveLength(1);
      const history = (await b.client!.request("chat.history", {})).payload as History;
      expect(history.messages.map((m) => [m.role, m.text])).toEqual([
        ["user", "answer me once"],
        ["assistant", answer],
      ]);
      // The chat.send retried by its key gets the answer the record kept.
      const again = await b.client!.request("chat.send", {
        text: "answer me once",
        idempotencyKey: "written-run-0001",
      });
      expect(again.payload).toMatchObject({ status: "completed", text: answer });
    }, 60_000);
  },
);

describe("a run frozen after its settle's transcript write, before the settle's step", () => {
  it("frozen there and woken after another process finished it: its late settle changes nothing", async () => {
    const inst = make("written-freeze");
    const answer = "Written, then frozen before the settle.";
    model.script({ text: answer }, { text: "A second answer, which no model call is made for." });
    // Another process takes the session over once the frozen one's lease runs out, and finishes the run.
    const b = await frozenThenTakenOver(inst, "run.before-settle", "answer me once", "written-run-0002");
    expect(model.requests).toHaveLength(1);
    const history = (await b.client!.request("chat.history", {})).payload as History;
    expect(history.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "answer me once"],
      ["assistant", answer],
    ]);
    expect(await answerLines(inst, "agent:main:webchat:direct:owner", "written-run-0002")).toEqual([
      ["assistant", answer],
      ["outcome", "completed"],
    ]);
  }, 60_000);
});

describe.each(LAYOUTS)("a run killed right after its settle began the session's next run%s", (_, threads) => {
  it("the next run, begun but never started, runs once after the restart; both answered once, in order", async () => {
    const inst = make(`settle-crash-${threads}`, {
      config: threaded(threads, { agent: { queueMode: "followup" } }),
    });
    model.script({ text: "First answer.", chunkSize: 4, delayMs: 100 }, { text: "Second answer." });
    const a = await inst.start({ failpoints: "run.after-settle=kill@1" });
    // The second message queues behind the first run (followup), so the first run's settle begins it.
    a.client!.request("chat.send", { text: "first question", idempotencyKey: "settle-run-0001" }).catch(
      () => {},
    );
    await waitFor(() => modelCallsWith("first question") === 1, "the first model call");
    a.client!.request("chat.send", { text: "second question", idempotencyKey: "settle-run-0002" }).catch(
      () => {},
    );
    await a.hub.waitForOutput(/failpoint run\.after-settle: kill/);
    const redis = new Redis(REDIS_URL);
    try {
      // Killed with the second run begun in the settle's step: running, its attempt 1, no model call yet.
      expect(await redis.hmget(`${inst.prefix}:run:settle-run-0002`, "status", "attempt")).toEqual([
        "running",
        "1",
      ]);
    } finally {
      redis.disconnect();
    }
    expect(modelCallsWith("second question")).toBe(0);
    const b = await inst.start();
    await resumedRunCompleted(inst, "settle-run-0002");
    const history = (await b.client!.request("chat.history", {})).payload as History;
    expect(history.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "first question"],
      ["assistant", "First answer."],
      ["user", "second question"],
      ["assistant", "Second answer."],
    ]);
    expect(modelCallsWith("second question")).toBe(1);
  }, 60_000);
});

describe.each(LAYOUTS)(
  "a run killed right after its reply's push claimed the reply's target for delivery%s",
  (_, threads) => {
    it("is sent once after the restart, from the reply the push queued: one model call", async () => {
      const telegram = await startFakeTelegram();
      try {
        const user = 6161 + threads;
        const inst = make(`push-claim-crash-${threads}`, {
          config: threaded(threads, {
            channels: {
              telegram: fakeTelegramChannel(telegram, [user]),
            },
          }),
        });
        const answer = "Queued and claimed, not yet sent.";
        model.script({ text: answer }, { text: "A second answer, which no model call is made for." });
        // The first push that claims its key where it runs: the run's reply, its target claimed for delivery in
        // the push's own step (from an agent thread, for the main thread's delivery).
        const a = await inst.start({ failpoints: "mailbox.after-claim-here=kill@1" });
        telegram.pushUpdate(privateText({ chatId: user, fromId: user, text: "deliver me once" }));
        await a.hub.waitForOutput(/failpoint mailbox\.after-claim-here: kill/);
        await a.hub.exited;
        expect(telegram.sent(user)).toEqual([]);
        await inst.start();
        const answers = () => telegram.sent(user).filter((m) => m.text === answer).length;
        await waitFor(() => answers() === 1, "the answer at the platform", 20_000);
        await new Promise((r) => setTimeout(r, 1500));
        expect(answers()).toBe(1);
        expect(telegram.sent(user)).toHaveLength(1);
        expect(modelCallsWith("deliver me once")).toBe(1);
      } finally {
        await telegram.close();
      }
    }, 60_000);
  },
);

describe.each(LAYOUTS)("recovery time%s", (_, threads) => {
  it("kill -9 and a restart on the same state directory: answered within seconds, not a lease later", async () => {
    // A 60 s lease (the production default is 30 s): only recognizing the dead predecessor makes this fast.
    const inst = make(`fast-restart-${threads}`, {
      env: { HUB_LANE_LEASE_MS: "60000" },
      config: threaded(threads),
    });
    model.script(
      { text: "never finishes ".repeat(200), chunkSize: 5, delayMs: 200 },
      { text: "Resumed fast." },
    );
    const a = await inst.start();
    await a.client!.request("chat.send", { text: "resume me fast", idempotencyKey: "fast-run-0001" });
    await waitFor(() => modelCallsWith("resume me fast") === 1, "the model call");
    await a.hub.kill();
    const restartAt = Date.now();
    const b = await inst.start();
    // Generous for a loaded CI machine, and still far below the lease a takeover would otherwise wait for.
    await resumedRunCompleted(inst, "fast-run-0001");
    expect(Date.now() - restartAt).toBeLessThan(20_000);
    const history = (await b.client!.request("chat.history", {})).payload as History;
    expect(history.messages.filter((m) => m.role === "assistant").map((m) => m.text)).toEqual([
      "Resumed fast.",
    ]);
  }, 60_000);
});

describe("a hub killed mid-run while another shares its Redis", () => {
  it("another hub sharing Redis takes over within the lease of the last heartbeat", async () => {
    const leaseMs = 5000;
    const a = make("takeover-a", { env: { HUB_LANE_LEASE_MS: String(leaseMs) } });
    const b = make("takeover-b", { env: { HUB_LANE_LEASE_MS: String(leaseMs) }, prefix: a.prefix });
    model.script(
      { text: "never finishes ".repeat(200), chunkSize: 5, delayMs: 200 },
      { text: "Taken over." },
    );
    const first = await a.start();
    const second = await b.start();
    await second.client!.request("chat.history", {});
    await first.client!.request("chat.send", { text: "take me over", idempotencyKey: "takeover-run-0001" });
    await waitFor(() => modelCallsWith("take me over") === 1, "the model call");
    await first.hub.kill();
    const killedAt = Date.now();
    // The lease runs out at most leaseMs after the kill; the other hub's sweep (every second) then wakes
    // the session: about 5.9 s on a quiet machine. The rest is slack for a loaded CI machine (two test
    // workers and their hub processes on two cores), still short of waiting out a second lease.
    await waitFor(
      () => modelCallsWith("take me over") === 2,
      "the other hub to resume the run",
      leaseMs + 6000,
    );
    expect(Date.now() - killedAt).toBeLessThan(leaseMs + 6000);
    expect(await second.client!.terminal("takeover-run-0001", 10_000)).toMatchObject({ text: "Taken over." });
  }, 60_000);
});

describe("Redis restarting empty", () => {
  let server: ChildProcess | undefined;
  afterEach(() => {
    server?.kill("SIGKILL");
  });

  async function startRedis(port: number): Promise<ChildProcess> {
    const child = spawn("redis-server", ["--port", String(port), "--save", "", "--appendonly", "no"], {
      stdio: "ignore",
    });
    const probe = new Redis(port, "127.0.0.1", { lazyConnect: true, retryStrategy: () => 50 });
    probe.on("error", () => {});
    await waitFor(async () => (await probe.ping().catch(() => "")) === "PONG", "redis-server to answer");
    probe.disconnect();
    return child;
  }

  it("is detected and said loudly; the run in flight ends with a recorded outcome and a message to the user", async () => {
    const port = await freePort();
    server = await startRedis(port);
    const url = `redis://127.0.0.1:${port}`;
    const inst = make("redis-lost", { env: { REDIS_URL: url } });
    model.script({ text: "never finishes ".repeat(200), chunkSize: 5, delayMs: 200 });
    const { hub, client } = await inst.start();
    await client!.request("chat.send", { text: "lose my redis", idempotencyKey: "lost-run-0001" });
    await waitFor(() => modelCallsWith("lose my redis") === 1, "the model call");
    server.kill("SIGKILL");
    await new Promise((r) => server!.once("exit", r));
    server = await startRedis(port);
    await hub.waitForOutput(/REDIS LOST ITS DATA/, 20_000);
    expect(await client!.terminal("lost-run-0001", 20_000)).toMatchObject({ state: "error" });
    await client!.waitFor(
      (f) =>
        f.type === "event" &&
        f.payload.runId === "lost-run-0001.lost" &&
        /send it again/.test(f.payload.text),
      "the user's notice",
    );
    const redis = new Redis(url);
    expect(await redis.hget(`${inst.prefix}:run:lost-run-0001`, "status")).toBe("failed");
    redis.disconnect();
    const history = (await client!.request("chat.history", {})).payload as History;
    expect(history.messages.at(-1)?.role).not.toBe("user");
  }, 60_000);
});

describe("a run killed while a message steered into it was being taken in", () => {
  // The steered message was taken from the run's steering (its first tool batch's boundary) and then
  // the hub was killed: before its user line was written, or after that but before its record said the
  // run answered it. Either way the resumed run answers it, once, and its record says so.
  it.each([
    ["before its user line was written", "run.after-take-steering"],
    ["after its user line was written", "run.after-steered-write"],
  ])(
    "killed %s: the resumed run answers it once",
    async (_when, point) => {
      const inst = make(`steer-crash-${point.slice(4, 14)}`);
      model.script(
        { toolCalls: [{ name: "current_time", arguments: "{}" }], delayMs: 400, chunkSize: 2 },
        { text: "Answer with both." },
      );
      const a = await inst.start({ failpoints: `${point}=kill@1` });
      a.client!.request("chat.send", { text: "first question", idempotencyKey: "steer-run-0001" }).catch(
        () => {},
      );
      await waitFor(() => modelCallsWith("first question") === 1, "the first model call");
      a.client!.request("chat.send", { text: "also this", idempotencyKey: "steer-run-0002" }).catch(() => {});
      await a.hub.waitForOutput(new RegExp(`failpoint ${point.replace(".", "\\.")}: kill`));
      expect(modelCallsWith("also this")).toBe(0);
      const b = await inst.start();
      await resumedRunCompleted(inst, "steer-run-0001");
      // One model call after the restart: the question, then the message steered into it, then the note.
      expect(modelCallsWith("also this")).toBe(1);
      const resumed = model.requests.at(-1)!.messages as Array<{ role: string; content: string }>;
      expect(resumed.slice(-3).map((m) => [m.role, m.content.split(",")[0]])).toEqual([
        ["user", "first question"],
        ["user", "also this"],
        ["system", "Note: the hub restarted while you were answering the user's last messages"],
      ]);
      expect(resumed.filter((m) => m.content === "also this")).toHaveLength(1);
      const redis = new Redis(REDIS_URL);
      try {
        expect(await redis.hmget(`${inst.prefix}:run:steer-run-0002`, "status", "text")).toEqual([
          "completed",
          "(answered in run steer-run-0001)",
        ]);
      } finally {
        redis.disconnect();
      }
      const history = (await b.client!.request("chat.history", {})).payload as History;
      const users = history.messages.filter((m) => m.role === "user").map((m) => m.text);
      expect(users.filter((t) => t === "also this")).toHaveLength(1);
      expect(history.messages.at(-1)).toMatchObject({ role: "assistant", text: "Answer with both." });
    },
    60_000,
  );
});

describe("a run whose transcript write fails right after it took a steered message in", () => {
  it("fails, and the steered message runs as its own turn: answered once", async () => {
    const inst = make("steer-fail");
    model.script(
      { toolCalls: [{ name: "current_time", arguments: "{}" }], delayMs: 400, chunkSize: 2 },
      { text: "Answer to the steered one." },
    );
    const a = await inst.start({ failpoints: "run.after-take-steering=throw@1" });
    a.client!.request("chat.send", { text: "first question", idempotencyKey: "fail-run-0001" }).catch(
      () => {},
    );
    await waitFor(() => modelCallsWith("first question") === 1, "the first model call");
    await a.client!.request("chat.send", { text: "also this", idempotencyKey: "fail-run-0002" });
    expect(await a.client!.terminal("fail-run-0002", 30_000)).toMatchObject({
      state: "final",
      text: "Answer to the steered one.",
    });
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.hget(`${inst.prefix}:run:fail-run-0001`, "status")).toBe("failed");
    } finally {
      redis.disconnect();
    }
    // Its own turn: the steered message is the last user message of the one model call that has it.
    expect(modelCallsWith("also this")).toBe(1);
    const last = model.requests.at(-1)!.messages as Array<{ role: string; content: string }>;
    expect(last.filter((m) => m.role === "user").at(-1)?.content).toBe("also this");
    const history = (await a.client!.request("chat.history", {})).payload as History;
    expect(history.messages.filter((m) => m.text === "also this")).toHaveLength(1);
  }, 60_000);
});

describe("a run killed between its settle and the queueing of a message steered in too late", () => {
  it("the message, moved aside by the settle, is answered after the restart, once", async () => {
    const inst = make("late-steer-crash");
    // A plain answer (no tool batch): a message steered in meanwhile is never taken; the settle moves it aside.
    model.script({ text: "First answer.", chunkSize: 4, delayMs: 100 }, { text: "Late answer." });
    const a = await inst.start({ failpoints: "run.before-late-requeue=kill@1" });
    a.client!.request("chat.send", { text: "first question", idempotencyKey: "late-run-0001" }).catch(
      () => {},
    );
    await waitFor(() => modelCallsWith("first question") === 1, "the first model call");
    a.client!.request("chat.send", { text: "late message", idempotencyKey: "late-run-0002" }).catch(() => {});
    // Killed between the settle's step and its queueing of the late message.
    await a.hub.waitForOutput(/failpoint run\.before-late-requeue: kill/);
    expect(modelCallsWith("late message")).toBe(0);
    const b = await inst.start();
    await resumedRunCompleted(inst, "late-run-0002");
    expect(modelCallsWith("late message")).toBe(1);
    const history = (await b.client!.request("chat.history", {})).payload as History;
    expect(history.messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "first question"],
      ["assistant", "First answer."],
      ["user", "late message"],
      ["assistant", "Late answer."],
    ]);
  }, 60_000);
});
