import { captureLogs, createLogger } from "@hub/core";
import { type FakeDiscord, freeLocalPort, startFakeDiscord } from "@hub/fakes";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { redisLease } from "../../../test/support/redis-lease.js";
import type { DiscordAdapter } from "../src/index.js";
import { adapterFor } from "./harness.js";

// Scale-out (issue 16): one bot's gateway connection is held by one hub process at a time.
const prefix = testPrefix("dc-lease");
const redis = new Redis(REDIS_URL);
let fake: FakeDiscord;
let adapters: DiscordAdapter[] = [];
beforeAll(async () => {
  fake = await startFakeDiscord();
});
afterEach(async () => {
  await Promise.all(adapters.map((a) => a.stop()));
  adapters = [];
});
afterAll(async () => {
  await fake.close();
  await dropPrefix(prefix);
  redis.disconnect();
});

const logger = createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });

async function process_(key: string, ttlMs = 900): Promise<DiscordAdapter> {
  const adapter = adapterFor(fake, logger, {
    lease: redisLease(new Redis(REDIS_URL), key, ttlMs),
    reconnect: { initialMs: 100, maxMs: 500 },
  });
  adapters.push(adapter);
  await adapter.start(async () => ({ kind: "accepted" }));
  return adapter;
}

describe("discord gateway lease", () => {
  it("a second process waits naming the holder; a lease taken over disconnects the holder; never two connections", async () => {
    const key = `${prefix}:discord:lease:default`;
    const first = await process_(key);
    await waitFor(() => first.status().state === "connected", "the first process connected", 10_000);
    const second = await process_(key);
    expect(second.status()).toMatchObject({
      state: "reconnecting",
      reason: expect.stringMatching(
        /another hub process \(\S+ pid \d+\) holds this Discord bot's gateway connection/,
      ),
    });
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, fake.gateway.liveConnections)), 10);
    // Each READY's read-back waits on the adapter's stop signal: a handover's READYs leave no pile of listeners.
    const leaks: string[] = [];
    const onWarning = (warning: Error) => {
      if (warning.name === "MaxListenersExceededWarning") leaks.push(warning.message);
    };
    process.on("warning", onWarning);
    try {
      await new Promise((r) => setTimeout(r, 2000));
      expect(fake.gateway.liveConnections).toBe(1);
      // The holder stops (its lease released): the waiting process connects within a renewal period.
      await first.stop();
      await waitFor(() => second.status().state === "connected", "the second process took over", 10_000);
      // Another machine takes the lease (the holder was frozen past it): the holder lets the gateway go.
      await redis.set(key, "other-host:4242:boot:token", "PX", 3000);
      await waitFor(() => fake.gateway.liveConnections === 0, "the holder disconnecting", 5000);
      await waitFor(
        () => /another hub process \(other-host pid 4242\)/.test(second.status().reason ?? ""),
        "the status naming the new holder",
        5000,
      );
      expect(second.status().state).toBe("reconnecting");
      // When the other machine's lease runs out, this process connects again.
      await waitFor(() => second.status().state === "connected", "connected again", 10_000);
    } finally {
      clearInterval(watch);
      process.off("warning", onWarning);
    }
    expect(fake.gateway.liveConnections).toBe(1);
    expect(most).toBe(1);
    expect(leaks).toEqual([]);
  }, 40_000);

  it("an unreachable Discord logs one line per retry, with the restApi hint; the status says the same", async () => {
    const { logger: log, records: lines } = captureLogs("info");
    const adapter = adapterFor(fake, log, {
      restApi: `http://127.0.0.1:${await freeLocalPort()}/api`, // nothing listens here
      lease: redisLease(new Redis(REDIS_URL), `${prefix}:discord:lease:unreachable`, 900),
      reconnect: { initialMs: 100, maxMs: 200 },
    });
    adapters.push(adapter);
    await adapter.start(async () => ({ kind: "accepted" }));
    const retries = () => lines.filter((l) => String(l.msg).startsWith("discord could not connect"));
    await waitFor(() => retries().length >= 4, "four failed attempts", 10_000);
    await adapter.stop();
    const failed = retries();
    for (const line of failed) {
      expect(line).toMatchObject({
        level: 40,
        reason: expect.stringContaining("check channels.discord.restApi"),
      });
    }
    // Besides the first "connecting" and the last "stopped", every line is one failed attempt.
    const others = lines.filter((l) => !failed.includes(l) && l.msg !== "discord stopped");
    expect(others.map((l) => l.msg)).toEqual(["discord connecting"]);
    expect(adapter.status().lastError?.reason).toContain("check channels.discord.restApi");
  }, 20_000);
});
