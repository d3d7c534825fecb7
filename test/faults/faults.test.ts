import { describe, expect, it } from "vitest";
import { deliveryFaultRun } from "./delivery.js";
import { hubCrashRun } from "./hub-crash.js";

// Fault runs, CI-sized (issue 16): real processes, real Redis, fake platforms. `npm run bench:faults`
// runs the same at scale and prints the figures.
describe("fault runs (CI-sized)", () => {
  it("delivery workers SIGKILLed at random moments: 0 lost, 0 out of order per target, duplicates counted", async () => {
    const r = await deliveryFaultRun({
      chats: 40,
      segments: 5,
      workers: 3,
      killEveryMs: [300, 900],
      leaseMs: 1000,
      // Slow sends keep the load running past the first kill (delivery alone takes well under a second).
      sendDelayMs: 150,
    });
    console.log("delivery workers killed:", r);
    expect(r.kills).toBeGreaterThan(0);
    expect(r).toMatchObject({ segments: 200, lost: 0, outOfOrder: 0, failed: 0 });
    // Only a segment in flight at a kill may arrive twice.
    expect(r.duplicates).toBeLessThanOrEqual(r.kills * 20);
  }, 240_000);

  it("Redis (AOF) killed and restarted mid-load: 0 lost, 0 out of order", async () => {
    const r = await deliveryFaultRun({
      chats: 30,
      segments: 5,
      workers: 2,
      restartRedisAfterMs: 150,
      // Each chat's five sends take 300 ms or more: the restart lands mid-load.
      sendDelayMs: 60,
    });
    console.log("redis restarted:", r);
    expect(r.redisRestarts).toBe(1);
    expect(r).toMatchObject({ segments: 150, lost: 0, outOfOrder: 0, failed: 0 });
  }, 240_000);

  it.each([
    ["in files", "files"],
    ["in Redis", "redis"],
  ] as const)(
    "the whole hub SIGKILLed mid-run and restarted, sessions %s: every message answered or its failure recorded",
    async (_, sessionStore) => {
      const chats = 6;
      const kills = 1;
      const r = await hubCrashRun({ chats, messagesPerChat: 3, kills, sessionStore });
      console.log(`hub killed (sessions ${sessionStore}):`, r);
      expect(r.lost).toBe(0);
      expect(r.answered + r.answeredTwice + r.recordedFailures).toBe(r.messages);
      expect(r.answered).toBeGreaterThan(0);
      // An extra copy comes from a send in flight at a kill (Telegram takes no idempotency key), at most
      // one per chat (its sends go one at a time) per kill, or from a timed-out send retried once.
      expect(r.extraCopies).toBeLessThanOrEqual(chats * kills + r.unknownSendOutcomes);
    },
    240_000,
  );
});
