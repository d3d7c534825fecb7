import type { Socket } from "node:net";
import type { Cluster, Redis } from "ioredis";
import { afterEach, describe, expect, it, vi } from "vitest";
import { REDIS_URL } from "../../../test/support/redis.js";
import { type OwnRedisCluster, startRedisCluster } from "../../../test/support/redis-server.js";
import { createRedis } from "../src/redis.js";

// Counts the writes that reach the socket's handle (one system call each): `_write` for one chunk,
// `_writev` for the chunks a cork held.
function countHandleWrites(socket: Socket): () => number {
  let writes = 0;
  const internals = socket as unknown as Record<"_write" | "_writev", (...args: unknown[]) => void>;
  for (const method of ["_write", "_writev"] as const) {
    const original = internals[method].bind(socket);
    internals[method] = (...args: unknown[]) => {
      writes++;
      original(...args);
    };
  }
  return () => writes;
}

let clients: Array<Redis | Cluster> = [];
let cluster: OwnRedisCluster | undefined;
afterEach(async () => {
  for (const client of clients) client.disconnect();
  clients = [];
  await cluster?.stop();
  cluster = undefined;
});

describe("a turn's Redis writes", () => {
  it("leave in one system call, answered in order", async () => {
    const redis = createRedis(REDIS_URL);
    clients.push(redis);
    await redis.ping();
    const handleWrites = countHandleWrites(redis.stream as Socket);
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => redis.echo(`turn ${i}`)));
    expect(answers).toEqual(Array.from({ length: 50 }, (_, i) => `turn ${i}`));
    expect(handleWrites()).toBe(1);
    // The next turn's writes are a write of their own: nothing stays held.
    await Promise.all([redis.echo("a"), redis.echo("b")]);
    expect(handleWrites()).toBe(2);
  });

  it("still leave under a test's fake timers (the flush is not a timer the test controls)", async () => {
    const redis = createRedis(REDIS_URL);
    clients.push(redis);
    await redis.ping();
    vi.useFakeTimers();
    try {
      expect(await redis.echo("under fake timers")).toBe("under fake timers");
    } finally {
      vi.useRealTimers();
    }
    expect(await redis.echo("after")).toBe("after");
  });

  it("leave in one system call per node of a cluster", async () => {
    cluster = await startRedisCluster();
    const redis = createRedis(cluster.url) as unknown as Cluster;
    clients.push(redis);
    await redis.set("{turn}:warm", "1");
    // A connected master: its socket was wrapped when the cluster opened it.
    const [node] = redis.nodes("master").filter((n) => n.status === "ready");
    expect(node).toBeDefined();
    const handleWrites = countHandleWrites(node!.stream as Socket);
    await Promise.all(Array.from({ length: 20 }, (_, i) => node!.echo(`node ${i}`)));
    expect(handleWrites()).toBe(1);
  }, 60_000);
});
