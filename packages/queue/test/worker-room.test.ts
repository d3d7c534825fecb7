import { MessageChannel } from "node:worker_threads";
import { createLogger } from "@hub/core";
import { afterEach, describe, expect, it } from "vitest";
import { monitorRedis } from "../../../test/support/monitor.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { type ClaimedKey, mailboxBase, OrderedMailbox, WorkerRoom } from "../src/index.js";

// A push on one thread claims an idle key for a worker on another thread of the process (an agent thread's
// reply for the main thread's delivery): the claim crosses a real message port to the worker's mailbox.
const logger = createLogger({ level: "silent" });
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Item = { n: number };

/**
 * The worker's mailbox (`delivering`, one worker of `concurrency` whose handler records each item and
 * waits for `gate(key)` when one is set) and the pushing thread's (`handing`), whose claims reach
 * `delivering.adopt` through a message port unless `hold` keeps them (see `held`).
 */
async function twoThreads(name: string, concurrency: number, o: { hold?: boolean } = {}) {
  const prefix = testPrefix(name);
  const options = { name: "m", redisUrl: REDIS_URL, prefix, logger, parse: (raw: unknown) => raw as Item };
  const tuning = { sweepIntervalMs: 100, graceMs: 300, leaseMs: 3000, slotWaitMs: 300 };
  const delivering = new OrderedMailbox<Item>({ ...options, ...tuning });
  const room = new WorkerRoom();
  const handled: string[] = [];
  const gates = new Map<string, Promise<void>>();
  // How long a key's drain takes, in ms.
  const delays = new Map<string, number>();
  const worker = delivering.startWorker(
    async (item, ctx) => {
      handled.push(`${ctx.key}:${item.data.n}`);
      await gates.get(ctx.key);
      const delay = delays.get(ctx.key);
      if (delay) await new Promise((r) => setTimeout(r, delay));
    },
    { concurrency, room },
  );
  const port = new MessageChannel();
  port.port2.on("message", (claim: ClaimedKey) => delivering.adopt(claim));
  const held: ClaimedKey[] = [];
  // The keys claimed for the worker by pushes here, in claim order.
  const claimed: string[] = [];
  const handing = new OrderedMailbox<Item>({ ...options, ...tuning });
  handing.addRemoteWorker({
    room: new WorkerRoom(room.buffer),
    claimed: (claim) => {
      claimed.push(claim.key);
      if (o.hold) held.push(claim);
      else port.port1.postMessage(claim);
    },
  });
  const ready = `${mailboxBase(prefix, "m")}:ready`;
  const monitor = await monitorRedis();
  const woken: string[] = [];
  monitor.on("monitor", (_time, [command, key, ...values]) => {
    if (command?.toLowerCase() === "rpush" && key === ready) woken.push(...values);
  });
  cleanups.push(async () => {
    monitor.disconnect();
    port.port1.close();
    await worker.close();
    await handing.close();
    await delivering.close();
    await dropPrefix(prefix);
  });
  const push = (key: string, n: number) =>
    handing.push(key, [{ id: `i${n}`, data: { n } }], { drainHere: true });
  return { delivering, worker, handing, handled, gates, delays, woken, held, claimed, push, port, room };
}

describe("keys claimed for a worker on another thread (WorkerRoom)", () => {
  it("a push there claims an idle key for the worker, which drains each key in order; nothing goes through the ready list", async () => {
    // Slots enough for every key's drain and every push's held slot at once (a push holds one before its step
    // knows whether it claims: with none left it wakes its key through Redis, as it would on one thread).
    const t = await twoThreads("room-claims", 8);
    // Each round's keys taken by the worker before the next round's pushes.
    for (let n = 0; n < 5; n++) {
      await Promise.all(["a", "b", "c"].map((key) => t.push(key, n)));
      await waitFor(() => t.handled.length === 3 * (n + 1), `round ${n} handled`);
    }
    for (const key of ["a", "b", "c"])
      expect(t.handled.filter((h) => h.startsWith(`${key}:`))).toEqual(
        [0, 1, 2, 3, 4].map((n) => `${key}:${n}`),
      );
    expect(t.woken).toEqual([]);
    // Each key claimed here at least once (again whenever its drain had ended before the next push).
    expect(new Set(t.claimed)).toEqual(new Set(["a", "b", "c"]));
  });

  it("with every slot of the worker taken, a push wakes its key through the ready list, drained once a slot frees", async () => {
    const t = await twoThreads("room-full", 1);
    let open = () => {};
    t.gates.set("busy", new Promise<void>((resolve) => (open = resolve)));
    await t.push("busy", 1);
    await waitFor(() => t.handled.includes("busy:1"), "the busy key in the only slot");
    await t.push("next", 1);
    // MONITOR's line may come after the push's answer.
    await waitFor(() => t.woken.length > 0, "a wake-up");
    expect(t.woken).toEqual(["next"]);
    expect(t.claimed).toEqual(["busy"]);
    open();
    await waitFor(() => t.handled.includes("next:1"), "the woken key drained");
    expect(t.handled).toEqual(["busy:1", "next:1"]);
  });

  it("with its only slot busy in a short drain, a push claims the key to wait there for it: no wake-up through Redis", async () => {
    const t = await twoThreads("room-wait", 1);
    t.delays.set("warm", 40);
    t.delays.set("busy", 100);
    // One drain ended first: the worker knows how long its drains take.
    await t.push("warm", 1);
    await waitFor(() => t.handled.includes("warm:1"), "the first drain");
    await new Promise((r) => setTimeout(r, 100));
    await t.push("busy", 1);
    await waitFor(() => t.handled.includes("busy:1"), "the busy key in the only slot");
    await t.push("next", 1);
    await waitFor(() => t.handled.includes("next:1"), "the waiting key drained");
    expect(t.handled).toEqual(["warm:1", "busy:1", "next:1"]);
    expect(t.claimed).toEqual(["warm", "busy", "next"]);
    expect(t.woken).toEqual([]);
  });

  it("the worker's own thread leaves a slot held for a claim under way to it: a key on the ready list waits", async () => {
    const t = await twoThreads("room-held", 1, { hold: true });
    // Claimed for the worker's only slot; the claim not handed over yet.
    await t.push("claimed", 1);
    expect(t.held.map((c) => c.key)).toEqual(["claimed"]);
    // Woken through Redis meanwhile: the worker must not fill the held slot with it.
    await t.delivering.push("woken", [{ id: "w", data: { n: 1 } }]);
    await new Promise((r) => setTimeout(r, 300));
    expect(t.handled).toEqual([]);
    t.delivering.adopt(t.held[0] as ClaimedKey);
    await waitFor(() => t.handled.length === 2, "both keys drained");
    expect(t.handled).toEqual(["claimed:1", "woken:1"]);
  });

  it("a closing worker offers no slot to other threads, even as its drains in flight end", async () => {
    const t = await twoThreads("room-closing", 2);
    let open = () => {};
    t.gates.set("last", new Promise<void>((resolve) => (open = resolve)));
    await t.push("last", 1);
    await waitFor(() => t.handled.includes("last:1"), "the drain in flight");
    const elsewhere = new WorkerRoom(t.room.buffer);
    const closed = t.worker.close();
    expect(elsewhere.reserve()).toBeUndefined();
    open();
    await closed;
    expect(elsewhere.reserve()).toBeUndefined();
  });

  it("a key handed over after the worker closed goes back to the ready list, and another worker drains it once", async () => {
    const t = await twoThreads("room-closed", 2, { hold: true });
    await t.push("late", 1);
    expect(t.held.map((c) => c.key)).toEqual(["late"]);
    await t.worker.close();
    const handled: string[] = [];
    const other = t.delivering.startWorker(
      async (item, ctx) => void handled.push(`${ctx.key}:${item.data.n}`),
      {
        concurrency: 1,
      },
    );
    cleanups.push(() => other.close());
    t.delivering.adopt(t.held[0] as ClaimedKey);
    await waitFor(() => handled.length === 1, "the key drained by the other worker");
    expect(t.woken).toEqual(["late"]);
    expect([...t.handled, ...handled]).toEqual(["late:1"]);
  });
});

describe("WorkerRoom", () => {
  it("hands out each free slot once across threads, none while ready keys go first, and as many places to wait as published", () => {
    const room = new WorkerRoom();
    const elsewhere = new WorkerRoom(room.buffer);
    room.publish(2, false);
    expect([elsewhere.reserve(), elsewhere.reserve(), elsewhere.reserve()]).toEqual([
      "slot",
      "slot",
      undefined,
    ]);
    // The worker's thread leaves the held slots to the claims under way.
    expect(room.held()).toBe(2);
    elsewhere.release();
    expect(elsewhere.reserve()).toBe("slot");
    elsewhere.handedOver();
    room.taken();
    elsewhere.release();
    expect(room.held()).toBe(0);
    room.publish(0, false, 2);
    expect([elsewhere.reserve(), elsewhere.reserve(), elsewhere.reserve()]).toEqual([
      "wait",
      "wait",
      undefined,
    ]);
    room.publish(5, true, 3);
    expect(elsewhere.reserve()).toBeUndefined();
  });

  it("frees the slots a thread that claimed through it held when that thread ended, once", () => {
    const room = new WorkerRoom();
    const holds = WorkerRoom.holdsCell();
    const thread = new WorkerRoom(room.buffer, holds);
    room.publish(3, false);
    expect([thread.reserve(), thread.reserve()]).toEqual(["slot", "slot"]);
    // One claim posted and taken; the other step under way when the thread ended.
    thread.handedOver();
    room.taken();
    expect(room.held()).toBe(1);
    room.forget(holds);
    room.forget(holds);
    expect(room.held()).toBe(0);
    expect([thread.reserve(), thread.reserve(), thread.reserve(), thread.reserve()]).toEqual([
      "slot",
      "slot",
      "slot",
      undefined,
    ]);
  });

  it("when the worker's thread ended, claims nothing more for it and forgets the slots held for claims posted to it", () => {
    const room = new WorkerRoom();
    const elsewhere = new WorkerRoom(room.buffer);
    room.publish(3, false);
    // One claim posted to the thread (never taken: it ended), one step still under way.
    expect([elsewhere.reserve(), elsewhere.reserve()]).toEqual(["slot", "slot"]);
    elsewhere.handedOver();
    elsewhere.ended();
    expect(elsewhere.reserve()).toBeUndefined();
    expect(room.held()).toBe(1);
    // The step under way claims nothing after all; a worker started again on the room has every slot.
    elsewhere.release();
    room.publish(3, false);
    expect([elsewhere.reserve(), elsewhere.reserve(), elsewhere.reserve(), elsewhere.reserve()]).toEqual([
      "slot",
      "slot",
      "slot",
      undefined,
    ]);
  });
});
