import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import {
  generationBase,
  keepGenerationClock,
  readGenerationClock,
  SessionWriters,
  VisibleLines,
} from "../src/index.js";

const prefix = testPrefix("genclock");
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

const realNow = Date.now.bind(Date);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// This machine's clock set `behindMs` behind Redis's (both run here): a hub on a machine whose clock is off.
function clockBehind(behindMs: number): void {
  vi.spyOn(Date, "now").mockImplementation(() => realNow() - behindMs);
}

// Back to the machine's clock, and Redis's read again.
afterEach(async () => {
  vi.restoreAllMocks();
  await readGenerationClock(redis, prefix);
});

describe("generation clock", () => {
  it("reads how far Redis's clock is from this machine's, and takes generations on Redis's", async () => {
    clockBehind(10_000);
    const ahead = await readGenerationClock(redis, prefix);
    expect(Math.abs((ahead ?? 0) - 10_000)).toBeLessThan(200);
    expect(Math.abs(generationBase() - realNow())).toBeLessThan(200);
  });

  it("a hub whose clock is behind still claims above the generations a transcript has after Redis lost them", async () => {
    const writers = new SessionWriters(redis, prefix);
    // A hub on a machine with the right time claims and writes its claim line.
    const first = await writers.claim("lost", "sid", "run-a");
    const lines = new VisibleLines([
      { type: "writer", runId: "run-a", writer: `run-a#${first.claim.generation}`, at: 0 },
    ]);
    // Redis loses the session's writer record (a restart without the last second of its AOF), and takes
    // far longer than a few milliseconds to come back.
    await redis.del(writers.keyOf("lost"));
    await sleep(50);
    // A hub whose clock is a minute behind takes the session next, on Redis's clock.
    clockBehind(60_000);
    await readGenerationClock(redis, prefix);
    const next = await writers.claim("lost", "sid", "run-b");
    expect(next.claim.generation).toBeGreaterThan(first.claim.generation);
    // Its claim line is the current claim to every reader: its answer is read back, not hidden as late.
    const claimLine = {
      type: "writer" as const,
      runId: "run-b",
      writer: `run-b#${next.claim.generation}`,
      at: 0,
    };
    const answer = {
      type: "assistant" as const,
      runId: "run-b",
      writer: claimLine.writer,
      text: "hi",
      at: 0,
    };
    lines.add([claimLine, answer]);
    expect(lines.lines.slice(1)).toEqual([claimLine, answer]);
  });

  it("keeps counting on Redis's time when this machine's clock is set back while it runs", async () => {
    await readGenerationClock(redis, prefix);
    clockBehind(60_000);
    expect(Math.abs(generationBase() - realNow())).toBeLessThan(200);
  });

  it("keeps no read whose round trip took too long to place it in time (a busy event loop)", async () => {
    const read = readGenerationClock(redis, prefix);
    // The event loop is busy while Redis's answer waits: when it is read, it is 150 ms old at least.
    const until = performance.now() + 150;
    while (performance.now() < until);
    expect(await read).toBeUndefined();
  });

  it("claims on this machine's clock only until the first read, which a start waits for", async () => {
    vi.resetModules();
    const fresh = await import("../src/generation-clock.js");
    clockBehind(30_000);
    expect(fresh.generationBase()).toBeLessThan(realNow() - 29_000);
    const clock = fresh.keepGenerationClock(redis, prefix, createLogger({ level: "silent" }));
    try {
      await clock.firstRead;
      expect(Math.abs(fresh.generationBase() - realNow())).toBeLessThan(200);
    } finally {
      clock.stop();
    }
  });

  it("says when this machine's clock is a second or more off Redis's, once, and again after it was right", async () => {
    const lines: string[] = [];
    const log = createLogger({
      level: "info",
      destination: { write: (line: string) => void lines.push(line) },
    });
    const warnings = () => lines.filter((l) => l.includes("differs from Redis's")).length;
    clockBehind(5_000);
    const clock = keepGenerationClock(redis, prefix, log, 20);
    try {
      await vi.waitFor(() => expect(warnings()).toBe(1));
      await sleep(100);
      expect(warnings()).toBe(1);
      vi.restoreAllMocks();
      await sleep(100);
      clockBehind(5_000);
      await vi.waitFor(() => expect(warnings()).toBe(2));
    } finally {
      clock.stop();
    }
  });
});
