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

// This process's clock set `behindMs` behind the machine's (Redis's): a hub on a machine whose clock is off.
function clockBehind(behindMs: number): void {
  vi.spyOn(Date, "now").mockImplementation(() => realNow() - behindMs);
}

// Back to the machine's clock, and the offset read again from it (about 0: Redis runs on this machine).
afterEach(async () => {
  vi.restoreAllMocks();
  await readGenerationClock(redis);
});

describe("generation clock", () => {
  it("reads how far Redis's clock is from this process's, and takes generations on Redis's", async () => {
    clockBehind(10_000);
    const ahead = await readGenerationClock(redis);
    expect(Math.abs(ahead - 10_000)).toBeLessThan(200);
    expect(Math.abs(generationBase() - realNow())).toBeLessThan(200);
  });

  it("a hub whose clock is behind still claims above the generations a transcript has after Redis lost them", async () => {
    const writers = new SessionWriters(redis, prefix);
    // A hub on a machine with the right time claims and writes its claim line.
    const first = await writers.claim("lost", "sid", "run-a");
    const lines = new VisibleLines([
      { type: "writer", runId: "run-a", writer: `run-a#${first.claim.generation}`, at: 0 },
    ]);
    // Redis loses the session's writer record (a restart without the last second of its AOF).
    await redis.del(writers.keyOf("lost"));
    // A hub whose clock is a minute behind takes the session next, on Redis's clock.
    clockBehind(60_000);
    await readGenerationClock(redis);
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

  it("says once when this machine's clock is a second or more off Redis's, and keeps reading until stopped", async () => {
    const lines: string[] = [];
    const log = createLogger({
      level: "info",
      destination: { write: (line: string) => void lines.push(line) },
    });
    clockBehind(5_000);
    const clock = keepGenerationClock(redis, log, 50);
    try {
      await vi.waitFor(() => expect(lines.some((l) => l.includes("differs from Redis's"))).toBe(true));
      expect(Math.abs(generationBase() - realNow())).toBeLessThan(200);
      // Set right while it runs: the next read takes the offset back to about 0.
      vi.restoreAllMocks();
      await vi.waitFor(() => expect(Math.abs(generationBase() - realNow())).toBeLessThan(200));
      expect(lines.filter((l) => l.includes("differs from Redis's"))).toHaveLength(1);
    } finally {
      clock.stop();
    }
  });
});
