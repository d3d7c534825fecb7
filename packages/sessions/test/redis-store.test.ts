import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { hasRedisServer, type OwnRedis, startOwnRedis } from "../../../test/support/redis-server.js";
import { RedisSessionStore } from "../src/redis-store.js";

// Resolves when a connection is ready again (its errors while Redis is down are expected, and not thrown).
function readyAgain(connection: Redis): Promise<void> {
  connection.on("error", () => {});
  return new Promise((resolve) => connection.once("ready", () => resolve()));
}

const logger = createLogger({ level: "silent" });
const prefix = testPrefix("redis-store");
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});
const store = () => new RedisSessionStore(redis, prefix, logger);
const user = (text: string, writer?: string) =>
  ({ type: "user", runId: "r", text, at: 1, ...(writer ? { writer } : {}) }) as const;
const texts = (entries: Awaited<ReturnType<RedisSessionStore["read"]>>) =>
  entries.flatMap((e) => (e.type === "user" ? [e.text] : []));

describe("RedisSessionStore", () => {
  it("two stores (two processes) see one index and one transcript, each reading only what is new", async () => {
    const mine = store();
    const other = store();
    const { sessionId } = await mine.resolve("agent:main:a");
    expect((await other.resolve("agent:main:a")).sessionId).toBe(sessionId);
    await mine.append(sessionId, [user("one")]);
    expect(texts(await mine.read(sessionId))).toEqual(["one"]);
    await other.append(sessionId, [user("two"), user("three")]);
    expect(texts(await mine.read(sessionId))).toEqual(["one", "two", "three"]);
    expect((await mine.read(sessionId))[0]).toMatchObject({ type: "session", sessionKey: "agent:main:a" });
  });

  it("a superseded writer's late appends are dropped by every reader", async () => {
    const s = store();
    const { sessionId } = await s.resolve("agent:main:b");
    await s.append(sessionId, [
      { type: "writer", runId: "old", writer: "old#1", at: 1 },
      user("mine", "old#1"),
    ]);
    await s.append(sessionId, [{ type: "writer", runId: "new", writer: "new#2", at: 2 }]);
    await s.append(sessionId, [user("late", "old#1"), user("current", "new#2")]);
    expect(texts(await store().read(sessionId))).toEqual(["mine", "current"]);
  });

  it("reset starts a new transcript; list names every session, latest first", async () => {
    const s = store();
    const first = await s.resolve("agent:main:c");
    await s.append(first.sessionId, [user("before")]);
    await new Promise((r) => setTimeout(r, 5));
    const second = await s.reset("agent:main:c");
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(texts(await s.read(second.sessionId))).toEqual([]);
    expect(texts(await s.read(first.sessionId))).toEqual(["before"]);
    const listed = await s.list();
    expect(listed[0]).toMatchObject({ sessionKey: "agent:main:c", sessionId: second.sessionId });
    expect(listed.map((r) => r.sessionKey).sort()).toEqual(["agent:main:a", "agent:main:b", "agent:main:c"]);
    expect(await s.get("agent:main:none")).toBeUndefined();
  });

  it.skipIf(!hasRedisServer())(
    "after Redis came back with fewer lines (a backup restored), a reader sees the lines appended since",
    () =>
      backedUpThenMore("agent:main:restored", async ({ own, mine, other, sessionId, ready }) => {
        await own.restoreBackup();
        await ready;
        await other.append(sessionId, [user("after")]);
        expect(texts(await mine.read(sessionId))).toEqual(["one", "after"]);
      }),
    30_000,
  );

  it.skipIf(!hasRedisServer())(
    "a read waiting while Redis is down and answered after a restore reads from the start",
    () =>
      backedUpThenMore("agent:main:in-flight", async ({ own, mine, other, sessionId, ready }) => {
        await own.down();
        // Asked while Redis is down: sent again, from the cached length, once the restored Redis is up.
        const reading = mine.read(sessionId);
        await own.restoreBackup();
        await ready;
        expect(texts(await reading)).toEqual(["one"]);
        await other.append(sessionId, [user("after")]);
        expect(texts(await mine.read(sessionId))).toEqual(["one", "after"]);
      }),
    30_000,
  );

  it("refuses a sessionId that is not a plain id", async () => {
    await expect(store().append("../x", [user("x")])).rejects.toThrow(/invalid sessionId/);
  });

  it("two stores resolving a new key at once end on one session, with one header", async () => {
    const [a, b] = [store(), store()];
    const [ra, rb] = await Promise.all([a.resolve("agent:main:race"), b.resolve("agent:main:race")]);
    expect(ra).toEqual(rb);
    expect(await store().get("agent:main:race")).toEqual(ra);
    expect((await store().read(ra.sessionId)).map((e) => e.type)).toEqual(["session"]);
    expect((await store().list()).filter((r) => r.sessionKey === "agent:main:race")).toEqual([ra]);
  });
});

/**
 * Two stores (two processes) on a Redis of the test's own: a transcript with "one" when it was backed up, and
 * "two" and "three" after, read by `mine`; `ready` resolves when both connections are ready again.
 */
async function backedUpThenMore(
  sessionKey: string,
  test: (s: {
    own: OwnRedis;
    mine: RedisSessionStore;
    other: RedisSessionStore;
    sessionId: string;
    ready: Promise<unknown>;
  }) => Promise<void>,
): Promise<void> {
  const own = await startOwnRedis();
  const connections = [new Redis(own.url), new Redis(own.url)] as const;
  try {
    const [mine, other] = connections.map((c) => new RedisSessionStore(c, prefix, logger));
    if (!mine || !other) throw new Error("two stores");
    const { sessionId } = await mine.resolve(sessionKey);
    await mine.append(sessionId, [user("one")]);
    own.backUp();
    await mine.append(sessionId, [user("two"), user("three")]);
    expect(texts(await mine.read(sessionId))).toEqual(["one", "two", "three"]);
    const ready = Promise.all(connections.map(readyAgain));
    await test({ own, mine, other, sessionId, ready });
  } finally {
    for (const c of connections) c.disconnect();
    await own.stop();
  }
}
