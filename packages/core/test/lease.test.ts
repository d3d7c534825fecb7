import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  ConnectionLease,
  captureLogs,
  isDeadLocalHolder,
  type LeaseStore,
  PID_SPACE,
  PROCESS_START,
  SingleHolder,
} from "../src/index.js";

/** A lease store in memory, with expiry by the clock: what the Redis scripts do, for one process. */
class MemoryLeaseStore implements LeaseStore {
  readonly keys = new Map<string, { token: string; until: number }>();
  async hold(key: string, token: string, ttlMs: number) {
    const now = Date.now();
    const current = this.keys.get(key);
    if (current && current.until > now && current.token !== token)
      return { held: false, holder: current.token };
    this.keys.set(key, { token, until: now + ttlMs });
    return { held: true, holder: token };
  }
  async release(key: string, token: string) {
    if (this.keys.get(key)?.token === token) this.keys.delete(key);
  }
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("SingleHolder: one process holds a connection", () => {
  it("waits naming the holder, takes over once the holder's lease runs out, and connects once", async () => {
    const store = new MemoryLeaseStore();
    // Another machine holds it and stops renewing (it died): taken over only when the lease runs out.
    await store.hold("k", "other-host:4242:boot:tok", 600);
    const waiting: string[] = [];
    let connects = 0;
    const stop = new AbortController();
    const holder = new SingleHolder({
      lease: new ConnectionLease(store, "k", 600),
      what: "this bot",
      onWaiting: (reason) => waiting.push(reason),
    });
    const started = Date.now();
    const run = holder.run(stop.signal, async (held) => {
      connects++;
      await new Promise((r) => held.addEventListener("abort", r, { once: true }));
    });
    await wait(900);
    expect(waiting[0]).toBe(
      "another hub process (other-host pid 4242) holds this bot; taking over when it stops",
    );
    expect(connects).toBe(1);
    expect(store.keys.get("k")?.token).toMatch(new RegExp(`^${hostname()}:${process.pid}:`));
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    stop.abort();
    await run;
    expect(store.keys.has("k")).toBe(false);
  });

  it("says a waiting period once when it begins and once when it ends, not at every try", async () => {
    const store = new MemoryLeaseStore();
    await store.hold("k", "other-host:4242:boot:tok", 700);
    let unavailable = true;
    // The lease store does not answer at first (Redis down), then another process holds the lease.
    const flaky: LeaseStore = {
      hold: (key, token, ttl) =>
        unavailable ? Promise.reject(new Error("Redis down")) : store.hold(key, token, ttl),
      release: (key, token) => store.release(key, token),
    };
    const { logger, records: lines } = captureLogs("info");
    const stop = new AbortController();
    const holder = new SingleHolder({
      lease: new ConnectionLease(flaky, "k", 600),
      what: "this bot",
      onWaiting: () => {},
      logger,
    });
    const run = holder.run(
      stop.signal,
      (held) => new Promise<void>((r) => held.addEventListener("abort", () => r(), { once: true })),
    );
    await wait(500); // two tries or more while unavailable
    unavailable = false;
    await wait(1000); // standby tries, then the other holder's lease runs out
    stop.abort();
    await run;
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, "the connection lease is unavailable (Redis down); this bot waits until it answers"],
      [30, "another hub process (other-host pid 4242) holds this bot; taking over when it stops"],
      [30, "this process holds this bot now"],
    ]);
  });

  it("a lease taken over by another process aborts the connection; it waits and connects again when free", async () => {
    const store = new MemoryLeaseStore();
    const lost: string[] = [];
    const connections: AbortSignal[] = [];
    const stop = new AbortController();
    const holder = new SingleHolder({
      lease: new ConnectionLease(store, "k", 300),
      what: "this bot",
      onWaiting: () => {},
      onLost: (reason) => lost.push(reason),
    });
    const run = holder.run(stop.signal, async (held) => {
      connections.push(held);
      await new Promise((r) => held.addEventListener("abort", r, { once: true }));
    });
    await wait(50);
    store.keys.set("k", { token: "other-host:7:boot:tok", until: Date.now() + 300 });
    await wait(200);
    expect(connections[0]?.aborted).toBe(true);
    expect(lost).toEqual(["another hub process (other-host pid 7) took over this bot"]);
    await wait(600);
    expect(connections).toHaveLength(2);
    expect(connections[1]?.aborted).toBe(false);
    stop.abort();
    await run;
  });

  it("a renewal that hangs (Redis unreachable) ends the connection when the lease runs out by our clock", async () => {
    const store = new MemoryLeaseStore();
    let hang = false;
    const hanging: LeaseStore = {
      hold: (key, token, ttlMs) => (hang ? new Promise(() => {}) : store.hold(key, token, ttlMs)),
      release: async () => {},
    };
    const lost: string[] = [];
    const stop = new AbortController();
    let connection: AbortSignal | undefined;
    const holder = new SingleHolder({
      lease: new ConnectionLease(hanging, "k", 600),
      what: "this bot",
      onWaiting: () => {},
      onLost: (reason) => lost.push(reason),
    });
    const run = holder.run(stop.signal, async (held) => {
      connection = held;
      hang = true;
      await new Promise((r) => held.addEventListener("abort", r, { once: true }));
    });
    const started = Date.now();
    while (!connection?.aborted) await wait(10);
    // Valid until 600 ms minus a margin after the last confirmed hold, never later.
    expect(Date.now() - started).toBeLessThan(700);
    expect(lost).toEqual(["the lease on this bot was not renewed in time"]);
    stop.abort();
    await run;
  });

  it("a holder of this pid space that no longer runs is not waited out; one of this process is", async () => {
    const token = (pid: number | string, space = PID_SPACE, start = "start0") =>
      `${hostname()}:${pid}:${start}:${space}:tok`;
    expect(isDeadLocalHolder(token(999999999))).toBe(true);
    expect(isDeadLocalHolder(token(process.pid))).toBe(true); // this pid, an earlier start
    expect(isDeadLocalHolder(token(process.pid, PID_SPACE, PROCESS_START))).toBe(false);
    expect(isDeadLocalHolder(token(process.ppid))).toBe(false);
    const store = new MemoryLeaseStore();
    const mine = new ConnectionLease(store, "k", 60_000);
    expect((await mine.hold()).held).toBe(true);
    // A second lease object of this same process (another adapter) does not steal it.
    expect((await new ConnectionLease(store, "k", 60_000).hold()).held).toBe(false);
    await store.hold("j", token(999999999), 60_000);
    expect((await new ConnectionLease(store, "j", 60_000).hold()).held).toBe(true);
  });

  it("a holder in another pid space (another container on this host, another machine) is waited out", async () => {
    // Containers on the host network share the host name and are each pid 1: the pid says nothing here.
    expect(isDeadLocalHolder(`${hostname()}:${process.pid}:start0:0123456789:tok`)).toBe(false);
    expect(isDeadLocalHolder(`${hostname()}:999999999:start0:0123456789:tok`)).toBe(false);
    // A token of an older version (host:pid:boot:random) names no space: waited out too.
    expect(isDeadLocalHolder(`${hostname()}:999999999:boot:tok`)).toBe(false);
    const store = new MemoryLeaseStore();
    await store.hold("k", `${hostname()}:${process.pid}:start0:0123456789:tok`, 60_000);
    expect((await new ConnectionLease(store, "k", 60_000).hold()).held).toBe(false);
  });

  it("the pid space is the same for every process of this machine and namespace (so restarts keep the fast path)", async () => {
    const child = spawnSync(
      process.execPath,
      ["--import", "tsx", "-e", 'import("@hub/core").then((m) => process.stdout.write(m.PID_SPACE))'],
      { encoding: "utf8", cwd: fileURLToPath(new URL(".", import.meta.url)) },
    );
    expect(child.stdout).toBe(PID_SPACE);
  });
});
