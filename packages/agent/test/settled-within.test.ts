import type { ReplySettlement, ReplyStream, StopSignal } from "@hub/core";
import { describe, expect, it } from "vitest";
import { PendingAnnouncements } from "../src/pending-announcements.js";
import { settledWithin } from "../src/settled-within.js";

// A reply as settledWithin sees it: only its settlement, which `settle` decides; a wait given up rejects
// with the signal's reason, as the ReplyDispatcher's does.
function replyOf(settle: Promise<ReplySettlement> | undefined): {
  reply: ReplyStream;
  signals: StopSignal[];
} {
  const signals: StopSignal[] = [];
  const reply = {
    replyId: "r-1",
    push: async () => {},
    end: async () => 1,
    settled: (signal?: StopSignal) => {
      if (signal) signals.push(signal);
      return new Promise<ReplySettlement>((resolve, reject) => {
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
        settle?.then(resolve, reject);
      });
    },
  } satisfies ReplyStream;
  return { reply, signals };
}

describe("settledWithin", () => {
  it("returns the settlement and leaves a finished wait alone", async () => {
    const settlement = { total: 2, delivered: 2, failed: 0 };
    const { reply, signals } = replyOf(Promise.resolve(settlement));
    expect(await settledWithin(reply, 5_000)).toEqual(settlement);
    expect(signals).toHaveLength(1);
    // Nothing to give up: aborting anyway built an error with a stack on every reply.
    expect(signals[0]?.aborted).toBe(false);
  });

  it("gives up a wait still running once the time has passed", async () => {
    const { reply, signals } = replyOf(undefined);
    const started = Date.now();
    expect(await settledWithin(reply, 200)).toBeUndefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(signals[0]?.aborted).toBe(true);
  });

  it("passes on a failed read of the settlement", async () => {
    const { reply } = replyOf(Promise.reject(new Error("Redis is down")));
    await expect(settledWithin(reply, 5_000)).rejects.toThrow("Redis is down");
  });

  it("gives up at once when the process stops waiting, or had stopped before", async () => {
    const { reply, signals } = replyOf(undefined);
    const stop = new AbortController();
    const waiting = settledWithin(reply, 60_000, stop.signal);
    stop.abort();
    expect(await waiting).toBeUndefined();
    expect(signals[0]?.aborted).toBe(true);
    expect(await settledWithin(replyOf(undefined).reply, 60_000, stop.signal)).toBeUndefined();
  });
});

describe("PendingAnnouncements", () => {
  it("a stop waits for the announcements; past the grace the ones still waiting for their replies go now", async () => {
    const pending = new PendingAnnouncements();
    const settling = replyOf(
      new Promise((r) => setTimeout(() => r({ total: 1, delivered: 1, failed: 0 }), 100)),
    );
    const stuck = replyOf(undefined);
    const announced: string[] = [];
    for (const [name, { reply }] of [
      ["settling", settling],
      ["stuck", stuck],
    ] as const)
      pending.track(
        settledWithin(reply, 60_000, pending.stopWaiting).then((s) => {
          announced.push(`${name} ${s ? "settled" : "not settled"}`);
        }),
      );
    expect(pending.size).toBe(2);
    const started = Date.now();
    await pending.drain(500);
    expect(Date.now() - started).toBeGreaterThanOrEqual(490);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(announced).toEqual(["settling settled", "stuck not settled"]);
    expect(pending.size).toBe(0);
  });

  it("hundreds of announcements waiting on the one stop signal raise no listener-leak warning", async () => {
    const pending = new PendingAnnouncements();
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      for (let i = 0; i < 200; i++)
        pending.track(settledWithin(replyOf(undefined).reply, 60_000, pending.stopWaiting));
      await pending.drain(50);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.map((w) => w.name)).not.toContain("MaxListenersExceededWarning");
    expect(pending.size).toBe(0);
  });

  it("a wait that ends takes its listener off the stop signal", async () => {
    const pending = new PendingAnnouncements();
    const settled = { total: 1, delivered: 1, failed: 0 };
    await Promise.all(
      Array.from({ length: 20 }, () =>
        settledWithin(replyOf(Promise.resolve(settled)).reply, 60_000, pending.stopWaiting),
      ),
    );
    await settledWithin(replyOf(undefined).reply, 10, pending.stopWaiting);
    expect(pending.stopWaiting.listening).toBe(0);
  });

  it("a stop with nothing pending, or only with announcements that fail, does not wait", async () => {
    const pending = new PendingAnnouncements();
    await pending.drain(60_000);
    pending.track(Promise.reject(new Error("Redis is down")));
    await pending.drain(60_000);
    expect(pending.size).toBe(0);
    expect(pending.stopWaiting.aborted).toBe(false);
  });
});
