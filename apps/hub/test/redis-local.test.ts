import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, vi } from "vitest";
import { freePort } from "../../../test/support/hub-process.js";
import { hasRedisServer } from "../../../test/support/redis-server.js";
import { ensureRedis, isDefaultRedisAddress } from "../src/redis-local.js";

const stateDir = mkdtempSync(join(tmpdir(), "hub-redis-local-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

describe("isDefaultRedisAddress", () => {
  it("is a local Redis on port 6379 (any database), and nothing else", () => {
    const at = (url: string) => isDefaultRedisAddress(new URL(url));
    expect(at("redis://127.0.0.1:6379")).toBe(true);
    expect(at("redis://localhost")).toBe(true);
    expect(at("redis://[::1]:6379/2")).toBe(true);
    expect(at("redis://:pw@127.0.0.1:6379/0")).toBe(true);
    expect(at("redis://127.0.0.1:6380")).toBe(false);
    expect(at("redis://redis.internal:6379")).toBe(false);
    expect(at("redis://10.0.0.5:6379")).toBe(false);
  });
});

describe("ensureRedis where nothing listens", { timeout: 30_000 }, () => {
  it("at an address it may start one: starts redis-server there with its data in the state dir", async (t) => {
    if (!hasRedisServer()) t.skip();
    const url = `redis://127.0.0.1:${await freePort()}`;
    const lines: string[] = [];
    const own = await ensureRedis(url, stateDir, (line) => lines.push(line), "REDIS_URL", {
      startOwnAt: () => true,
    });
    try {
      expect(own).toBeDefined();
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
      await client.connect();
      expect(await client.config("GET", "appendonly")).toEqual(["appendonly", "yes"]);
      client.disconnect();
      expect(statSync(join(stateDir, "redis")).isDirectory()).toBe(true);
      expect(lines).toEqual([
        `No Redis was running at ${url}; started redis-server for the hub (data in ${join(stateDir, "redis")}).`,
      ]);
    } finally {
      await own?.stop();
    }
  });

  it("leaves the Redis it started running when other clients use it (another hub process); else stops it", async (t) => {
    if (!hasRedisServer()) t.skip();
    const url = `redis://127.0.0.1:${await freePort()}`;
    const startOwn = () => ensureRedis(url, stateDir, () => {}, "REDIS_URL", { startOwnAt: () => true });
    const shared = await startOwn();
    const other = new Redis(url, { maxRetriesPerRequest: 0 });
    try {
      expect(await other.ping()).toBe("PONG");
      await shared?.stop();
      await new Promise((r) => setTimeout(r, 500));
      expect(await other.ping()).toBe("PONG");
    } finally {
      await other.call("SHUTDOWN", "NOSAVE").catch(() => {});
      other.disconnect();
    }
    await new Promise((r) => setTimeout(r, 300));
    const alone = await startOwn();
    expect(alone).toBeDefined();
    await alone?.stop();
    const answers = async () => {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => {});
      try {
        await probe.connect();
        return (await probe.ping()) === "PONG";
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    };
    await vi.waitFor(async () => expect(await answers()).toBe(false), { timeout: 5000 });
  });

  it("anywhere else (by default, any address but the default one): says to start the Redis set there", async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const lines: string[] = [];
    await expect(ensureRedis(url, stateDir, (line) => lines.push(line), "REDIS_URL")).rejects.toThrow(
      /: start the Redis you set there, or correct REDIS_URL \(the hub starts a Redis of its own only at the default address, redis:\/\/127\.0\.0\.1:6379\)\.$/,
    );
    expect(lines).toEqual([]);
  });
});
