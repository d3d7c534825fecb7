import { createLogger, type RunRequest, sleep, WriteFencedError } from "@hub/core";
import { type Command, Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import {
  type HandOn,
  RunRecords,
  SessionActivity,
  SessionAdmission,
  SessionLane,
  SessionWriters,
} from "../src/index.js";
import { directRequest } from "./requests.js";

const redis = new Redis(REDIS_URL);
const prefix = testPrefix("activity");
const silent = createLogger({ level: "silent" });
const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger: silent });
const admission = new SessionAdmission(redis, prefix, lane, "steer");
const records = new RunRecords(redis, prefix);
afterAll(async () => {
  await lane.close();
  await dropPrefix(prefix);
  redis.disconnect();
});

// A message admitted while run-a is the session's active run, in steer mode.
const steer = (runId: string, chat = "1") =>
  admission.admit(request(runId, chat), { key: `${prefix}:dedupe:${runId}`, ttlSeconds: 60 });

const request = (runId: string, chat = "1") => directRequest(runId, chat);

// The runIds a session's lane holds, in order (its items are "<runId>|<JSON>").
const laneIds = async (key: string) =>
  (await redis.lrange(lane.pushKeys(key).list, 0, -1)).map((item) => item.slice(0, item.indexOf("|")));

describe("SessionActivity.end", () => {
  it("hands on steered messages in order, including one that arrives during the hand-off", async () => {
    const activity = new SessionActivity(redis, prefix, "steer", { lane });
    const key = "agent:main:telegram:direct:1";
    // A running run has a record (a steer is marked there).
    await new RunRecords(redis, prefix).start("run-a", key, 60_000);
    await activity.begin(key, "run-a", 60_000);
    expect(await steer("m1")).toBe("steered");
    await activity.end(key, "run-a", async () => {
      // A message arrives while the hand-off is under way: it must go after m1, not ahead of it.
      expect(await steer("m2")).toBe("steered");
    });
    expect(await laneIds(key)).toEqual(["m1", "m2"]);
    expect(await activity.activeRun(key)).toBeUndefined();
    // Once the run has ended, a new message is queued as its own run.
    expect(await steer("m3")).toBe("queued");
  });
});

describe("a request for its own turn", () => {
  it("is queued after the running run in steer mode, never steered into it", async () => {
    const activity = new SessionActivity(redis, prefix, "steer", { lane });
    const key = "agent:main:telegram:direct:41";
    await records.start("run-o", key, 60_000);
    await activity.begin(key, "run-o", 60_000);
    const own = { ...directRequest("o1", "41"), ownTurn: true };
    expect(await admission.admit(own, { key: `${prefix}:dedupe:o1`, ttlSeconds: 60 })).toBe("queued");
    expect(await steer("o2", "41")).toBe("steered");
    expect(await laneIds(key)).toEqual(["o1"]);
  });
});

describe("SessionActivity.end with a steered message cjson cannot read", () => {
  it("hands it on all the same, in order with the others (a lone surrogate in its sender's name)", async () => {
    const activity = new SessionActivity(redis, prefix, "steer", { lane });
    const key = "agent:main:telegram:direct:31";
    await records.start("run-u", key, 60_000);
    await activity.begin(key, "run-u", 60_000);
    expect(await steer("u1", "31")).toBe("steered");
    // Finalizing normalizes the text, not a name: half an emoji there is stored as the JSON escape \ud83d
    // (JSON.stringify), which Redis' cjson refuses to decode.
    const odd = directRequest("u2", "31");
    odd.ctx.sender.name = "Ann \ud83d";
    expect(await admission.admit(odd, { key: `${prefix}:dedupe:u2`, ttlSeconds: 60 })).toBe("steered");
    expect(await steer("u3", "31")).toBe("steered");
    await activity.end(key, "run-u");
    expect(await laneIds(key)).toEqual(["u1", "u2", "u3"]);
    const items = await redis.lrange(lane.pushKeys(key).list, 0, -1);
    expect(JSON.parse(items[1]!.slice(items[1]!.indexOf("|") + 1)).ctx.sender.name).toBe("Ann \ud83d");
    expect(await activity.activeRun(key)).toBeUndefined();
  });
});

describe("SessionActivity.end by two processes at once", () => {
  it("hands the run's messages on in order: one process at a time (a settler and one that found the run over)", async () => {
    const key = "agent:main:telegram:direct:7";
    const settler = new SessionActivity(redis, prefix, "steer", { lane });
    const otherConnection = new Redis(REDIS_URL);
    const other = new SessionActivity(otherConnection, prefix, "steer", { lane });
    await new RunRecords(redis, prefix).start("run-x", key, 60_000);
    await settler.begin(key, "run-x", 60_000);
    for (const id of ["x1", "x2", "x3"]) expect(await steer(id, "7")).toBe("steered");
    // The settler first hands on what its settle took (x0a, x0b), slowly; meanwhile x4..x6 arrive and the
    // other process ends the run too.
    const first = settler.end(key, "run-x", async (handOn) => {
      for (const id of ["x0a", "x0b"]) {
        await new Promise((r) => setTimeout(r, 20));
        await handOn(request(id, "7"));
      }
    });
    await new Promise((r) => setTimeout(r, 5));
    for (const id of ["x4", "x5", "x6"]) expect(await steer(id, "7")).toBe("steered");
    const second = other.end(key, "run-x");
    await Promise.all([first, second]);
    otherConnection.disconnect();
    expect(await laneIds(key)).toEqual(["x0a", "x0b", "x1", "x2", "x3", "x4", "x5", "x6"]);
    expect(await settler.activeRun(key)).toBeUndefined();
  });

  it("a hand-on longer than the lease keeps it (renewed), so the other process still waits", async () => {
    const key = "agent:main:telegram:direct:8";
    const settler = new SessionActivity(redis, prefix, "steer", { handOnLeaseMs: 600, lane });
    const otherConnection = new Redis(REDIS_URL);
    const other = new SessionActivity(otherConnection, prefix, "steer", { handOnLeaseMs: 600, lane });
    await new RunRecords(redis, prefix).start("run-y", key, 60_000);
    await settler.begin(key, "run-y", 60_000);
    // The settler hands on what its settle took (y1) slowly, over more than two leases.
    const first = settler.end(key, "run-y", async (handOn) => {
      await new Promise((r) => setTimeout(r, 1500));
      await handOn(request("y1", "8"));
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(await steer("y2", "8")).toBe("steered");
    const second = other.end(key, "run-y");
    await Promise.all([first, second]);
    otherConnection.disconnect();
    expect(await laneIds(key)).toEqual(["y1", "y2"]);
  });
});

describe("SessionActivity.end by a process frozen past its hand-on lease", () => {
  it("queues the run's steered messages in order all the same: one taken is never queued after a later one", async () => {
    const key = "agent:main:telegram:direct:9";
    const { frozen, settler, other, close } = twoProcesses(key);
    await records.start("run-z", key, 60_000);
    await settler.begin(key, "run-z", 60_000);
    for (const id of ["z-a", "z-b"]) expect(await steer(id, "9")).toBe("steered");
    const first = settler.end(key, "run-z");
    await frozen.reached;
    // While it is frozen, c comes in, the settler's lease runs out, and another process ends the run.
    await steer("z-c", "9");
    await sleep(2 * LEASE_MS);
    await other.end(key, "run-z");
    frozen.thaw();
    await first;
    expect(await laneIds(key)).toEqual(["z-a", "z-b", "z-c"]);
    // Owed a drain, as a push owes it; and the run is over.
    expect(await redis.zscore(lane.pushKeys(key).sched, key)).not.toBeNull();
    expect(await other.activeRun(key)).toBeUndefined();
    await close();
  });
});

describe("what SessionActivity.end's `first` hands on, by a process frozen past its hand-on lease", () => {
  // What each process's `first` hands on: a settle's moved-aside messages, read without taking them.
  const handOnAll = (ids: string[], chat: string) => async (handOn: HandOn) => {
    for (const id of ids) await handOn(request(id, chat));
  };

  it("is queued once, in order, when another process ends the run meanwhile", async () => {
    const key = "agent:main:telegram:direct:11";
    const { frozen, settler, other, close } = twoProcesses(key);
    await records.start("run-w", key, 60_000);
    await settler.begin(key, "run-w", 60_000);
    expect(await steer("w-c", "11")).toBe("steered");
    const first = settler.end(key, "run-w", handOnAll(["w-s1", "w-s2"], "11"));
    // Frozen right after it queued w-s1: its lease runs out, and another process ends the run.
    await frozen.reached;
    await sleep(2 * LEASE_MS);
    await other.end(key, "run-w", handOnAll(["w-s1", "w-s2"], "11"));
    frozen.thaw();
    await first;
    expect(await laneIds(key)).toEqual(["w-s1", "w-s2", "w-c"]);
    await close();
  });

  it("is queued all the same when nobody took the lease over while the process was frozen", async () => {
    const key = "agent:main:telegram:direct:12";
    const { frozen, settler, close } = twoProcesses(key);
    await records.start("run-u", key, 60_000);
    await settler.begin(key, "run-u", 60_000);
    expect(await steer("u-c", "12")).toBe("steered");
    const first = settler.end(key, "run-u", handOnAll(["u-s1", "u-s2"], "12"));
    await frozen.reached;
    await sleep(2 * LEASE_MS);
    // Its next step is refused (the lease ran out): it starts over under the lease, queuing u-s1 no second time.
    frozen.thaw();
    await first;
    expect(await laneIds(key)).toEqual(["u-s1", "u-s2", "u-c"]);
    expect(await settler.activeRun(key)).toBeUndefined();
    await close();
  });

  for (const wakes of ["while the other process holds the lease", "after the other process ended the run"])
    it(`queues nothing it read before the freeze when it wakes ${wakes}: it starts over, reading afresh`, async () => {
      const chat = wakes.startsWith("while") ? "13" : "14";
      const key = `agent:main:telegram:direct:${chat}`;
      const { frozen, settler, other, close } = twoProcesses(key);
      await records.start(`run-${chat}`, key, 60_000);
      await settler.begin(key, `run-${chat}`, 60_000);
      expect(await steer(`${chat}-c`, chat)).toBe("steered");
      // Each `first` hands on what is still unanswered when it starts (as handOnSteering reads run records).
      const answered = new Set<string>();
      const unanswered = (handOn: HandOn) =>
        handOnAll(
          [`${chat}-s1`, `${chat}-s2`, `${chat}-s3`].filter((id) => !answered.has(id)),
          chat,
        )(handOn);
      const first = settler.end(key, `run-${chat}`, unanswered);
      await frozen.reached;
      await sleep(2 * LEASE_MS);
      // Meanwhile s3 is answered (say, ended with the run: its line was in the transcript).
      answered.add(`${chat}-s3`);
      const second = other.end(key, `run-${chat}`, async (handOn) => {
        await unanswered(handOn);
        if (wakes.startsWith("while")) {
          frozen.thaw();
          await sleep(LEASE_MS);
        }
      });
      await second;
      frozen.thaw();
      await first;
      expect(await laneIds(key)).toEqual([`${chat}-s1`, `${chat}-s2`, `${chat}-c`]);
      await close();
    });
});

/** How long a process may hand a run's messages on without renewing, in the frozen-process tests. */
const LEASE_MS = 300;

// Two processes that end the same run: the settler, whose Redis connection (its lane's too) freezes, as
// SIGSTOP would freeze it, right after its first step that writes the session's lane (nothing it sends,
// lease renewals too, reaches Redis until it thaws), and another one.
function twoProcesses(key: string) {
  const list = lane.pushKeys(key).list;
  const frozen = freezableRedis(new Redis(REDIS_URL), (args) => args.includes(list));
  const settlerLane = new SessionLane({ redisUrl: REDIS_URL, redis: frozen.redis, prefix, logger: silent });
  const settler = new SessionActivity(frozen.redis, prefix, "steer", {
    handOnLeaseMs: LEASE_MS,
    lane: settlerLane,
  });
  const otherConnection = new Redis(REDIS_URL);
  const other = new SessionActivity(otherConnection, prefix, "steer", { handOnLeaseMs: LEASE_MS, lane });
  const close = async () => {
    await settlerLane.close();
    frozen.redis.disconnect();
    otherConnection.disconnect();
  };
  return { frozen, settler, other, close };
}

// A process's Redis connection that freezes after the first script call whose keys and arguments
// `freezesAfter` picks: every command sent from then on waits until `thaw`.
function freezableRedis(redis: Redis, freezesAfter: (args: unknown[]) => boolean) {
  let thawed: Promise<void> | undefined;
  let thaw = () => {};
  let reachedIt = () => {};
  const reached = new Promise<void>((resolve) => {
    reachedIt = resolve;
  });
  const commands = new Set(["eval", "get", "set", "del", "hget", "hmget", "hset", "lrange", "llen"]);
  // Scripts go out as a Command of their own (runScript's `sendCommand`), other commands by name.
  const sent = async (name: string, args: unknown[], send: () => Promise<unknown>) => {
    if (thawed) await thawed;
    const answer = await send();
    if (!thawed && name.startsWith("eval") && freezesAfter(args)) {
      thawed = new Promise<void>((resolve) => {
        thaw = resolve;
      });
      reachedIt();
    }
    return answer;
  };
  const proxy = new Proxy(redis, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      if (name === "sendCommand")
        return (command: Command) =>
          sent(command.name, command.args, () => value.call(target, command) as Promise<unknown>);
      if (typeof name !== "string" || !commands.has(name)) return value;
      return (...args: unknown[]) => sent(name, args, () => value.apply(target, args) as Promise<unknown>);
    },
  });
  return { redis: proxy, reached, thaw: () => thaw() };
}

// A run in flight (its record started, the session's running run) holding the session's writer claim.
async function runningWithClaim(key: string, runId: string) {
  const activity = new SessionActivity(redis, prefix, "steer", { lane });
  await new RunRecords(redis, prefix).start(runId, key, 60_000);
  await activity.begin(key, runId, 60_000);
  const writers = new SessionWriters(redis, prefix);
  const fence = writers.fenceOf((await writers.claim(key, `session-${runId}`, runId)).claim);
  return { activity, writers, fence };
}

describe("SessionActivity.takeSteered", () => {
  it("answers every message taken so far, so a retry after a lost answer loses none; end hands on only untaken ones", async () => {
    const key = "agent:main:telegram:direct:2";
    const { activity, fence } = await runningWithClaim(key, "run-t");
    expect(await steer("t1", "2")).toBe("steered");
    const ids = (requests: RunRequest[]) => requests.map((r) => r.runId);
    expect(ids(await activity.takeSteered("run-t", fence))).toEqual(["t1"]);
    // The same step again (its first answer lost): t1 again, and what was steered since after it.
    expect(await steer("t2", "2")).toBe("steered");
    expect(ids(await activity.takeSteered("run-t", fence))).toEqual(["t1", "t2"]);
    expect(ids(await activity.readTaken("run-t"))).toEqual(["t1", "t2"]);
    expect(await activity.hasSteering("run-t")).toBe(false);
    expect(await steer("t3", "2")).toBe("steered");
    await activity.end(key, "run-t");
    expect(await laneIds(key)).toEqual(["t3"]);
  });

  it("keeps steered messages, taken or not, as long as their own run records (a run resumed after days of outage)", async () => {
    const key = "agent:main:telegram:direct:4";
    const { activity, fence } = await runningWithClaim(key, "run-k");
    // The run was admitted days ago: its record has hours left.
    await redis.expire(records.keyOf("run-k"), 3600);
    expect(await steer("k1", "4")).toBe("steered");
    const day = 24 * 3600;
    const recordTtl = await redis.ttl(records.keyOf("k1"));
    expect(recordTtl).toBeGreaterThan(6 * day);
    // Untaken: the run's steer list lives as long as the message's record, and so does the run's own
    // record (its "steered" mark sends its settle to the list).
    expect(await redis.ttl(`${prefix}:steer:run-k`)).toBeGreaterThanOrEqual(recordTtl - 5);
    expect(await redis.ttl(records.keyOf("run-k"))).toBeGreaterThanOrEqual(recordTtl - 5);
    // Taken: the run's taken list too, counted from the take.
    await activity.takeSteered("run-k", fence);
    expect(await redis.pttl(`${prefix}:steer:run-k:taken`)).toBeGreaterThanOrEqual((recordTtl - 5) * 1000);
  });

  it("keeps a collected batch and its flag as long as the messages' own run records, in the run's hands too", async () => {
    const key = "agent:main:telegram:direct:6";
    const { activity } = await runningWithClaim(key, "run-c");
    const collecting = new SessionAdmission(redis, prefix, lane, "collect");
    const collect = (runId: string) =>
      collecting.admit(request(runId, "6"), { key: `${prefix}:dedupe:${runId}`, ttlSeconds: 60 });
    expect(await collect("c1")).toBe("collected");
    expect(await collect("c2")).toBe("collected");
    const recordTtl = await redis.ttl(records.keyOf("c2"));
    expect(recordTtl).toBeGreaterThan(6 * 24 * 3600);
    expect(await redis.ttl(`${prefix}:collect:${key}`)).toBeGreaterThanOrEqual(recordTtl - 5);
    expect(await redis.ttl(`${prefix}:collect-pending:${key}`)).toBeGreaterThanOrEqual(recordTtl - 5);
    // The collect run takes the batch: kept as long under the run's own key, and the flag is cleared.
    const batch = await activity.takeCollected(key, "c1");
    expect(batch.map((r) => r.runId)).toEqual(["c1", "c2"]);
    expect(await redis.ttl(`${prefix}:collected:c1`)).toBeGreaterThanOrEqual(recordTtl - 5);
    expect(await redis.exists(`${prefix}:collect-pending:${key}`)).toBe(0);
  });

  it("takes nothing once the run's writer claim is superseded", async () => {
    const key = "agent:main:telegram:direct:3";
    const { activity, writers, fence } = await runningWithClaim(key, "run-f");
    expect(await steer("f1", "3")).toBe("steered");
    // Another attempt of the run claims the session (it resumed elsewhere and read the taken list then).
    await writers.claim(key, "session-run-f", "run-f");
    await expect(activity.takeSteered("run-f", fence)).rejects.toBeInstanceOf(WriteFencedError);
    expect(await activity.readTaken("run-f")).toEqual([]);
    expect(await activity.hasSteering("run-f")).toBe(true);
  });
});

describe("a session's own queue mode", () => {
  it("is what admission applies, read in its step, instead of the default", async () => {
    const activity = new SessionActivity(redis, prefix, "steer", { lane });
    const key = "agent:main:telegram:direct:1";
    await new RunRecords(redis, prefix).start("run-q", key, 60_000);
    await activity.begin(key, "run-q", 60_000);
    expect(await activity.queueMode(key)).toBe("steer");
    await activity.setQueueMode(key, "followup");
    expect(await activity.queueMode(key)).toBe("followup");
    // Mid-run: followup queues the message as its own run instead of steering it in.
    expect(await steer("q1")).toBe("queued");
    await activity.setQueueMode(key, "collect");
    expect(await steer("q2")).toBe("collected");
    await activity.end(key, "run-q");
  });

  it("set before it lived in the writer hash (queue-mode:<sessionKey>) is adopted once at start; a newer mode wins", async () => {
    const activity = new SessionActivity(redis, prefix, "steer", { lane });
    await redis.set(`${prefix}:queue-mode:agent:main:telegram:direct:old1`, "collect");
    await redis.set(`${prefix}:queue-mode:agent:main:telegram:direct:old2`, "followup");
    await activity.setQueueMode("agent:main:telegram:direct:old2", "interrupt");
    expect(await activity.adoptOldQueueModes()).toBe(2);
    expect(await activity.queueMode("agent:main:telegram:direct:old1")).toBe("collect");
    expect(await activity.queueMode("agent:main:telegram:direct:old2")).toBe("interrupt");
    expect(await redis.exists(`${prefix}:queue-mode:agent:main:telegram:direct:old1`)).toBe(0);
    // Done once per installation: a key of the old layout written after is not looked for again.
    await redis.set(`${prefix}:queue-mode:agent:main:telegram:direct:old3`, "collect");
    expect(await activity.adoptOldQueueModes()).toBe(0);
  });
});
