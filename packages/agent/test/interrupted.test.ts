import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, WriteFencedError } from "@hub/core";
import {
  FileSessionStore,
  RunRecords,
  SessionActivity,
  SessionAdmission,
  SessionLane,
  SessionWriters,
  WriterSupersededError,
} from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { directRequest } from "../../sessions/test/requests.js";
import { finalizeInterrupted, handOnSteering } from "../src/index.js";

const redis = new Redis(REDIS_URL);
const prefix = testPrefix("interrupted");
const logger = createLogger({ level: "silent" });
const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger });
const stateDir = mkdtempSync(join(tmpdir(), "hub-interrupted-"));
afterAll(async () => {
  await lane.close();
  await dropPrefix(prefix);
  redis.disconnect();
  rmSync(stateDir, { recursive: true, force: true });
});

const request = (runId: string, chat = "7") => directRequest(runId, chat);
// The runIds a session's lane holds, in order (its items are "<runId>|<JSON>").
const laneIds = async (key: string) =>
  (await redis.lrange(lane.pushKeys(key).list, 0, -1)).map((item) => item.slice(0, item.indexOf("|")));

describe("finalizeInterrupted", () => {
  it("takes the claim again before its outcome line: the dead attempt, had it only been frozen, is fenced and unseen", async () => {
    const runs = new RunRecords(redis, prefix);
    const sessions = new FileSessionStore(stateDir, logger);
    const writers = new SessionWriters(redis, prefix);
    const key = request("run-f", "8").ctx.sessionKey;
    await runs.start("run-f", key, 60_000);
    const { claim } = await writers.claim(key, "session-f", "run-f");
    const session = await sessions.resolve(key);
    const writer = `run-f#${claim.generation}`;
    await sessions.append(session.sessionId, [
      { type: "writer", runId: "run-f", writer, at: 1 },
      { type: "user", runId: "run-f", senderId: "8", text: "the question", writer, at: 1 },
    ]);
    const record = (await runs.get("run-f"))!;
    expect(await finalizeInterrupted({ runs, sessions, writers }, record, logger)).toBe("interrupted");
    await expect(writers.assertCurrent(claim)).rejects.toBeInstanceOf(WriterSupersededError);
    // Woken, the attempt writes its answer and outcome late, under its claim: no reader sees them.
    await sessions.append(session.sessionId, [
      { type: "assistant", runId: "run-f", text: "a late answer", writer, at: 2 },
      { type: "outcome", runId: "run-f", status: "completed", writer, at: 2 },
    ]);
    const lines = await sessions.read(session.sessionId);
    expect(lines.filter((e) => e.type === "outcome").map((e) => e.type === "outcome" && e.status)).toEqual([
      "interrupted",
    ]);
    expect(lines.some((e) => e.type === "assistant")).toBe(false);
  });

  it("writes no claim line where the run no longer held the claim: the newer writer's later lines stay seen", async () => {
    const runs = new RunRecords(redis, prefix);
    const sessions = new FileSessionStore(stateDir, logger);
    const writers = new SessionWriters(redis, prefix);
    const key = request("run-g", "9").ctx.sessionKey;
    await runs.start("run-g", key, 60_000);
    await writers.claim(key, "session-g", "run-g");
    // Another run took the session over and is writing.
    const newer = await writers.claim(key, "session-g", "run-h");
    const session = await sessions.resolve(key);
    const writer = `run-h#${newer.claim.generation}`;
    await sessions.append(session.sessionId, [{ type: "writer", runId: "run-h", writer, at: 1 }]);
    const record = (await runs.get("run-g"))!;
    expect(await finalizeInterrupted({ runs, sessions, writers }, record, logger)).toBe("interrupted");
    await sessions.append(session.sessionId, [
      { type: "user", runId: "run-h", text: "h's question", writer, at: 2 },
    ]);
    const lines = await sessions.read(session.sessionId);
    expect(lines.filter((e) => e.type === "writer").map((e) => e.type === "writer" && e.writer)).toEqual([
      writer,
    ]);
    expect(lines.some((e) => e.type === "user" && e.text === "h's question")).toBe(true);
    await writers.assertCurrent(newer.claim);
  });

  it("follows up the taken messages it never wrote (before those it never took) and ends the written ones with it", async () => {
    const runs = new RunRecords(redis, prefix);
    const activity = new SessionActivity(redis, prefix, "steer", { lane });
    const admission = new SessionAdmission(redis, prefix, lane, "steer");
    const sessions = new FileSessionStore(stateDir, logger);
    const steer = (runId: string) =>
      admission.admit(request(runId), { key: `${prefix}:dedupe:${runId}`, ttlSeconds: 60 });
    const key = request("run-x").ctx.sessionKey;
    await runs.start("run-x", key, 60_000);
    await activity.begin(key, "run-x", 60_000);
    for (const id of ["s1", "s2", "s4"]) expect(await steer(id)).toBe("steered");
    // The dead attempt took s1, s2 and s4 in; it wrote s2 and s4 to its transcript, marked s2 answered by
    // it and died before s4 (and before writing s1).
    const writers = new SessionWriters(redis, prefix);
    const { claim } = await writers.claim(key, "session-x", "run-x");
    await activity.takeSteered("run-x", writers.fenceOf(claim));
    const session = await sessions.resolve(key);
    await sessions.append(session.sessionId, [
      { type: "user", runId: "s2", senderId: "7", text: "s2", at: 1 },
      { type: "user", runId: "s4", senderId: "7", text: "s4", at: 1 },
    ]);
    await runs.start("s2", key, 60_000, "telegram", { outsideLane: true });
    await runs.finish("s2", { status: "completed", text: "(answered in run run-x)" });
    expect(await steer("s3")).toBe("steered");
    const record = (await runs.get("run-x"))!;
    expect(await finalizeInterrupted({ runs, sessions, activity, writers }, record, logger)).toBe(
      "interrupted",
    );
    // The dead attempt, if only frozen, can neither take more nor write nor mark what was handed on.
    await expect(activity.takeSteered("run-x", writers.fenceOf(claim))).rejects.toBeInstanceOf(
      WriteFencedError,
    );
    await expect(writers.assertCurrent(claim)).rejects.toBeInstanceOf(WriterSupersededError);
    expect(await laneIds(key)).toEqual(["s1", "s3"]);
    expect(await runs.get("run-x")).toMatchObject({ status: "interrupted" });
    expect(await runs.get("s4")).toMatchObject({ status: "interrupted" });
    expect(await runs.get("s2")).toMatchObject({ status: "completed" });
  });

  it("ends a collect run's batch with it: written messages interrupted, unwritten ones followed up", async () => {
    const runs = new RunRecords(redis, prefix);
    const activity = new SessionActivity(redis, prefix, "collect", { lane });
    const admission = new SessionAdmission(redis, prefix, lane, "collect");
    const sessions = new FileSessionStore(stateDir, logger);
    const writers = new SessionWriters(redis, prefix);
    const collect = (runId: string) =>
      admission.admit(request(runId, "9"), { key: `${prefix}:dedupe:${runId}`, ttlSeconds: 60 });
    const key = request("run-busy", "9").ctx.sessionKey;
    // c1, c2 and c3 are collected while run-busy runs; c1's item is the collect run.
    await runs.start("run-busy", key, 60_000);
    await activity.begin(key, "run-busy", 60_000);
    for (const id of ["c1", "c2", "c3"]) expect(await collect(id)).toBe("collected");
    // The collect run took the batch, wrote c1's and c2's lines and died before marking c2 and c3 answered.
    expect((await activity.takeCollected(key, "c1")).map((r) => r.runId)).toEqual(["c1", "c2", "c3"]);
    await runs.start("c1", key, 60_000);
    const { claim } = await writers.claim(key, "session-c", "c1");
    const session = await sessions.resolve(key);
    await sessions.append(session.sessionId, [
      { type: "user", runId: "c1", senderId: "9", text: "c1", at: 1 },
      { type: "user", runId: "c2", senderId: "9", text: "c2", at: 1 },
    ]);
    const record = (await runs.get("c1"))!;
    expect(await finalizeInterrupted({ runs, sessions, activity, writers }, record, logger)).toBe(
      "interrupted",
    );
    expect(await runs.get("c1")).toMatchObject({ status: "interrupted" });
    expect(await runs.get("c2")).toMatchObject({ status: "interrupted" });
    // c1's own item (the collect run), then the follow-up.
    expect(await laneIds(key)).toEqual(["c1", "c3"]);
    // A frozen attempt of the collect run can no longer write.
    await expect(writers.assertCurrent(claim)).rejects.toBeInstanceOf(WriterSupersededError);
  });

  it("hands a collect run's batch on when the run is found over after a crash right after its outcome", async () => {
    const runs = new RunRecords(redis, prefix);
    const activity = new SessionActivity(redis, prefix, "collect", { lane });
    const admission = new SessionAdmission(redis, prefix, lane, "collect");
    const sessions = new FileSessionStore(stateDir, logger);
    const collect = (runId: string) =>
      admission.admit(request(runId, "10"), { key: `${prefix}:dedupe:${runId}`, ttlSeconds: 60 });
    const key = request("run-busy-2", "10").ctx.sessionKey;
    await runs.start("run-busy-2", key, 60_000);
    await activity.begin(key, "run-busy-2", 60_000);
    for (const id of ["d1", "d2"]) expect(await collect(id)).toBe("collected");
    await activity.takeCollected(key, "d1");
    await runs.start("d1", key, 60_000);
    // The finalize decided d1's outcome and died before handing anything on.
    await runs.finish("d1", { status: "interrupted", error: "interrupted by a restart; not resumed" });
    // d1's item, handed out again, is found over: the hand-on runs from there, and again does nothing more.
    await handOnSteering({ runs, sessions, activity }, { runId: "d1", sessionKey: key });
    // d1's own item (the collect run), then the follow-up; and nothing again, even before d2 begins (its
    // record still "queued": the hand-on recorded it as handed on).
    expect(await laneIds(key)).toEqual(["d1", "d2"]);
    await handOnSteering({ runs, sessions, activity }, { runId: "d1", sessionKey: key });
    expect(await laneIds(key)).toEqual(["d1", "d2"]);
    await runs.start("d2", key, 60_000);
    await handOnSteering({ runs, sessions, activity }, { runId: "d1", sessionKey: key });
    expect(await laneIds(key)).toEqual(["d1", "d2"]);
  });

  it("leaves the writer claim of another run that holds the session now", async () => {
    const runs = new RunRecords(redis, prefix);
    const activity = new SessionActivity(redis, prefix, "steer", { lane });
    const admission = new SessionAdmission(redis, prefix, lane, "steer");
    const sessions = new FileSessionStore(stateDir, logger);
    const writers = new SessionWriters(redis, prefix);
    const key = request("run-y", "8").ctx.sessionKey;
    await runs.start("run-y", key, 60_000);
    await activity.begin(key, "run-y", 60_000);
    const session = await sessions.resolve(key);
    const { claim } = await writers.claim(key, session.sessionId, "run-y");
    expect(await admission.admit(request("y1", "8"), { key: `${prefix}:dedupe:y1`, ttlSeconds: 60 })).toBe(
      "steered",
    );
    await activity.takeSteered("run-y", writers.fenceOf(claim));
    // The session moved on: another run holds its writer claim now.
    const live = (await writers.claim(key, session.sessionId, "run-live")).claim;
    const record = (await runs.get("run-y"))!;
    expect(await finalizeInterrupted({ runs, sessions, activity, writers }, record, logger)).toBe(
      "interrupted",
    );
    expect(await laneIds(key)).toEqual(["y1"]);
    await writers.assertCurrent(live);
  });
});
