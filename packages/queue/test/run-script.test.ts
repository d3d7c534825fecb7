import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OwnRedis, startOwnRedis } from "../../../test/support/redis-server.js";
import { runScript } from "../src/redis.js";

// A Redis of the test's own: SCRIPT FLUSH and the command counts would disturb and be disturbed by other tests.
let server: OwnRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startOwnRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

const INCR = "return redis.call('INCR', KEYS[1])";

/** How often Redis ran each command since the last CONFIG RESETSTAT (INFO commandstats; Redis 7 counts SCRIPT LOAD as `script|load`, 6 as `script`). */
async function commandCalls(): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1] ?? "", Number(m[2])]));
}

describe("runScript", () => {
  it("calls that meet NOSCRIPT together (a restarted Redis) share one SCRIPT LOAD, none sends the text", async () => {
    await runScript(redis, INCR, ["rs:count"], []);
    await redis.script("FLUSH");
    await redis.config("RESETSTAT");
    const results = await Promise.all(
      Array.from({ length: 50 }, () => runScript(redis, INCR, ["rs:count"], [])),
    );
    expect(new Set(results).size).toBe(50);
    expect(await redis.get("rs:count")).toBe("51");
    const calls = await commandCalls();
    expect(calls.get("script|load") ?? calls.get("script")).toBe(1);
    expect(calls.get("eval") ?? 0).toBe(0);
    // Each call: one EVALSHA refused, one that ran.
    expect(calls.get("evalsha")).toBe(100);
  });

  it("after the next flush, it loads again", async () => {
    await redis.script("FLUSH");
    await redis.config("RESETSTAT");
    await runScript(redis, INCR, ["rs:other"], []);
    await redis.script("FLUSH");
    await runScript(redis, INCR, ["rs:other"], []);
    const calls = await commandCalls();
    expect(calls.get("script|load") ?? calls.get("script")).toBe(2);
    expect(await redis.get("rs:other")).toBe("2");
  });

  it("sends keys and arguments byte for byte, whatever their characters and lengths", async () => {
    const ECHO = "return {KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], tostring(#ARGV[3])}";
    const long = `${"é👀…".repeat(5000)}\r\n$3\r\n`;
    const result = await runScript(redis, ECHO, ["rs:ключ:{👀}"], ["", "plain", long, 42]);
    expect(result).toEqual(["rs:ключ:{👀}", "", "plain", long, "42", String(Buffer.byteLength(long))]);
  });
});
