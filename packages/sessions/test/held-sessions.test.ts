import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { hasRedisServer, type OwnRedis, startOwnRedis } from "../../../test/support/redis-server.js";
import {
  FileSessionStore,
  HeldSessions,
  RunRecords,
  RunSteps,
  SessionActivity,
  SessionLane,
  SessionWriters,
  type TranscriptEntry,
} from "../src/index.js";

// Resolves when a connection is ready again (its errors while Redis is down are expected, and not thrown).
function readyAgain(connection: Redis): Promise<void> {
  connection.on("error", () => {});
  return new Promise((resolve) => connection.once("ready", () => resolve()));
}

const prefix = testPrefix("held");
const redis = new Redis(REDIS_URL);
const logger = createLogger({ level: "silent" });
const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger });
const dirs: string[] = [];
afterAll(async () => {
  await lane.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await dropPrefix(prefix);
  redis.disconnect();
});

/** A store that counts what it reads back (the held copy's whole point is reading nothing). */
class CountingStore extends FileSessionStore {
  reads = 0;
  override async read(sessionId: string): Promise<TranscriptEntry[]> {
    this.reads++;
    return super.read(sessionId);
  }
}

/** One process: its store over the shared state directory and its held sessions. */
function hubProcess(dir: string, limits?: { sessions: number; chars: number }) {
  const store = new CountingStore(dir, logger);
  return { store, held: new HeldSessions(store, limits) };
}

const writers = new SessionWriters(redis, prefix);
const sharedSteps = stepsOver(redis, lane);

// A run's steps over one Redis connection.
function stepsOver(connection: Redis, on: SessionLane): RunSteps {
  const records = new RunRecords(connection, prefix);
  const activity = new SessionActivity(connection, prefix, "followup", { lane: on });
  return new RunSteps(connection, records, new SessionWriters(connection, prefix), activity);
}

/** A run as the runner makes one: begin (claim), hold, answer, outcome, settle; what the turn saw. */
async function run(
  p: { held: HeldSessions },
  sessionKey: string,
  runId: string,
  text: string,
  { steps } = { steps: sharedSteps },
) {
  const begun = await steps.begin({ runId, sessionKey }, 60_000, 120_000);
  if (begun.kind !== "started") throw new Error(`run ${runId} did not start: ${begun.kind}`);
  const writer = `${runId}#${begun.claim.generation}`;
  const held = await p.held.hold(sessionKey, begun.seen, [
    { type: "writer", runId, writer, at: Date.now() },
    { type: "user", runId, writer, text, at: Date.now() },
  ]);
  const seen = held.entries().flatMap((e) => (e.type === "user" ? [e.text] : []));
  await held.append([
    { type: "assistant", runId, writer, text: `answer to ${text}`, at: Date.now() },
    { type: "outcome", runId, writer, status: "completed", at: Date.now() },
  ]);
  const { released } = await steps.settle(begun.claim, {
    outcome: { status: "completed" },
    attempt: begun.attempt,
  });
  if (released) held.keep();
  return seen;
}

const stateDir = () => {
  const d = mkdtempSync(join(tmpdir(), "held-"));
  dirs.push(d);
  return d;
};

describe("HeldSessions: a session held in memory across a process's runs", () => {
  it("the next run here reads nothing back; a run in another process in between makes it read again", async () => {
    const dir = stateDir();
    const a = hubProcess(dir);
    const b = hubProcess(dir);
    const key = "agent:main:held:one";
    expect(await run(a, key, "h1-r1", "one")).toEqual(["one"]);
    const readsBefore = a.store.reads;
    expect(await run(a, key, "h1-r2", "two")).toEqual(["one", "two"]);
    expect(a.store.reads).toBe(readsBefore);
    expect(await run(b, key, "h1-r3", "three")).toEqual(["one", "two", "three"]);
    expect(await run(a, key, "h1-r4", "four")).toEqual(["one", "two", "three", "four"]);
    expect(a.store.reads).toBe(readsBefore + 1);
    // What a cold reader sees is what the held copy saw.
    const fresh = new FileSessionStore(dir, logger);
    const onDisk = await fresh.read((await fresh.get(key))!.sessionId);
    expect(onDisk.flatMap((e) => (e.type === "user" ? [e.text] : []))).toEqual([
      "one",
      "two",
      "three",
      "four",
    ]);
  });

  it("a write outside any claim (a context-only message, a reset) is seen by every process's next run", async () => {
    const dir = stateDir();
    const a = hubProcess(dir);
    const b = hubProcess(dir);
    const key = "agent:main:held:touch";
    await run(a, key, "h2-r1", "one");
    const { sessionId } = (await b.store.get(key))!;
    await b.store.append(sessionId, [{ type: "user", text: "context", contextOnly: true, at: Date.now() }]);
    await writers.touch(key);
    expect(await run(a, key, "h2-r2", "two")).toEqual(["one", "context", "two"]);
    const reset = await b.store.reset(key);
    await writers.touch(key);
    expect(await run(a, key, "h2-r3", "three")).toEqual(["three"]);
    expect((await a.store.get(key))?.sessionId).toBe(reset.sessionId);
  });

  it("a context-only message written while a run creates the session lands in the one session the key routes to", async () => {
    const dir = stateDir();
    for (let round = 0; round < 10; round++) {
      const a = hubProcess(dir);
      const b = hubProcess(dir);
      const key = `agent:main:held:new-${round}`;
      const context = async () => {
        const { sessionId } = await b.store.resolve(key);
        await b.store.append(sessionId, [
          { type: "user", text: "context", contextOnly: true, at: Date.now() },
        ]);
        await writers.touch(key);
      };
      await Promise.all([context(), run(a, key, `h-new-${round}`, "question")]);
      const fresh = new FileSessionStore(dir, logger);
      const routed = await fresh.read((await fresh.get(key))!.sessionId);
      expect(routed.flatMap((e) => (e.type === "user" ? [e.text] : [])).sort()).toEqual([
        "context",
        "question",
      ]);
    }
  });

  it("a run whose claim was taken over keeps nothing: the next run reads again", async () => {
    const dir = stateDir();
    const a = hubProcess(dir);
    const b = hubProcess(dir);
    const key = "agent:main:held:takeover";
    await run(a, key, "h3-r1", "one");
    const begun = await sharedSteps.begin({ runId: "h3-r2", sessionKey: key }, 60_000, 120_000);
    if (begun.kind !== "started") throw new Error("not started");
    const writer = `h3-r2#${begun.claim.generation}`;
    const held = await a.held.hold(key, begun.seen, [
      { type: "writer", runId: "h3-r2", writer, at: Date.now() },
    ]);
    // Another process claims the session and writes under its own claim meanwhile.
    const other = await writers.claim(key, held.record.sessionId, "h3-other");
    const otherWriter = `h3-other#${other.claim.generation}`;
    await b.store.append(held.record.sessionId, [
      { type: "writer", runId: "h3-other", writer: otherWriter, at: Date.now() },
      { type: "user", runId: "h3-other", writer: otherWriter, text: "other", at: Date.now() },
    ]);
    await writers.release(other.claim);
    const { released } = await sharedSteps.settle(begun.claim, {
      outcome: { status: "superseded" },
      attempt: begun.attempt,
    });
    expect(released).toBe(false);
    expect(await run(a, key, "h3-r3", "three")).toEqual(["one", "other", "three"]);
  });

  it("after Redis lost the session's writer record, an old copy is never taken for current", async () => {
    const dir = stateDir();
    const a = hubProcess(dir);
    const b = hubProcess(dir);
    const key = "agent:main:held:lost";
    await run(a, key, "h4-r1", "one");
    const lost = Number(await redis.hget(writers.keyOf(key), "generation"));
    await redis.del(writers.keyOf(key));
    // Generations are the claim's millisecond; a Redis that lost its data takes far longer than one to come back.
    while (Date.now() <= lost) await new Promise((resolve) => setTimeout(resolve, 1));
    // Another process runs the session as often as it takes to reach the generation after A's.
    await run(b, key, "h4-r2", "two");
    expect(await run(a, key, "h4-r3", "three")).toEqual(["one", "two", "three"]);
  });

  it.skipIf(!hasRedisServer())(
    "after Redis was restored from a backup, a copy kept since is read again, not taken for current",
    () =>
      onOwnRedis(async ({ own, connection, steps }) => {
        const dir = stateDir();
        // Process A's claims go through `connection`; its kept copies go when it reconnects.
        const a = { held: new HeldSessions(new FileSessionStore(dir, logger), undefined, connection) };
        const b = hubProcess(dir);
        const key = "agent:main:held:restored";
        await run(a, key, "h6-r1", "one", { steps });
        // The operator's backup: the writer record says A's claim was the last one, released.
        own.backUp();
        await run(b, key, "h6-r2", "two", { steps });
        const ready = readyAgain(connection);
        await own.restoreBackup();
        await ready;
        expect(await run(a, key, "h6-r3", "three", { steps })).toEqual(["one", "two", "three"]);
      }),
    30_000,
  );

  it.skipIf(!hasRedisServer())(
    "a copy a run took before its connection was ready again is not kept after it",
    () =>
      onOwnRedis(async ({ own, connection, steps }) => {
        const a = { held: new HeldSessions(new FileSessionStore(stateDir(), logger), undefined, connection) };
        const key = "agent:main:held:across";
        await run(a, key, "h7-r1", "one", { steps });
        expect(a.held.size).toBe(1);
        // The next run takes the copy, and Redis restarts while it runs (what a restore would be).
        const begun = await steps.begin({ runId: "h7-r2", sessionKey: key }, 60_000, 120_000);
        if (begun.kind !== "started") throw new Error("not started");
        const writer = `h7-r2#${begun.claim.generation}`;
        const held = await a.held.hold(key, begun.seen, [{ type: "writer", runId: "h7-r2", writer, at: 1 }]);
        const ready = readyAgain(connection);
        await own.restart();
        await ready;
        await held.append([{ type: "outcome", runId: "h7-r2", writer, status: "completed", at: 2 }]);
        const { released } = await steps.settle(begun.claim, {
          outcome: { status: "completed" },
          attempt: begun.attempt,
        });
        expect(released).toBe(true);
        // The process has seen the reconnect (as another run's hold would) before this run keeps its copy.
        expect(a.held.size).toBe(0);
        held.keep();
        expect(a.held.size).toBe(0);
      }),
    30_000,
  );

  it("keeps at most the configured sessions and characters, the least recently used going first", async () => {
    const dir = stateDir();
    const a = hubProcess(dir, { sessions: 2, chars: 100_000 });
    for (const k of ["x", "y", "z"]) await run(a, `agent:main:held:lru-${k}`, `h5-${k}1`, `${k}1`);
    expect(a.held.size).toBe(2);
    const reads = a.store.reads;
    await run(a, "agent:main:held:lru-z", "h5-z2", "z2");
    expect(a.store.reads).toBe(reads);
    await run(a, "agent:main:held:lru-x", "h5-x2", "x2");
    expect(a.store.reads).toBe(reads + 1);
    const small = hubProcess(dir, { sessions: 10, chars: 50 });
    await run(small, "agent:main:held:lru-big", "h5-big", "big");
    expect(small.held.size).toBe(0);
  });
});

/** A run's steps over a connection to a Redis of the test's own (`own`), for cases that restart or restore it. */
async function onOwnRedis(
  test: (s: { own: OwnRedis; connection: Redis; steps: RunSteps }) => Promise<void>,
): Promise<void> {
  const own = await startOwnRedis();
  const connection = new Redis(own.url);
  const ownLane = new SessionLane({ redisUrl: own.url, prefix, logger });
  try {
    await test({ own, connection, steps: stepsOver(connection, ownLane) });
  } finally {
    await ownLane.close();
    connection.disconnect();
    await own.stop();
  }
}
