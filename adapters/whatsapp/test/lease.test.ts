import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ConnectionLease, captureLogs, createLogger, type LeaseStore } from "@hub/core";
import { RedisLeaseStore } from "@hub/queue";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { redisLease } from "../../../test/support/redis-lease.js";
import { leaseKey, WhatsAppAdapter } from "../src/index.js";
import { FakeWhatsApp } from "./fake-whatsapp.js";

const prefix = testPrefix("wa-lease");
const redis = new Redis(REDIS_URL);
const children: ChildProcess[] = [];
let adapters: WhatsAppAdapter[] = [];
let n = 0;

afterEach(async () => {
  await Promise.all(adapters.map((a) => a.stop()));
  adapters = [];
  for (const child of children.splice(0)) child.kill("SIGKILL");
});
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

/** One hub process's adapter for the account `key`, on its own fake device, with its own lease. */
async function process_(key: string, ttlMs = 900) {
  const wa = new FakeWhatsApp();
  const lease = redisLease(new Redis(REDIS_URL), key, ttlMs);
  const adapter = new WhatsAppAdapter({
    accountId: "default",
    connector: wa,
    lease,
    logger: createLogger({ level: "silent" }),
    reconnect: { initialMs: 20, maxMs: 100 },
  });
  adapters.push(adapter);
  await adapter.start(async () => ({ kind: "accepted" }));
  return { adapter, wa, lease };
}

/** Another hub process (a child running `script`) holding the account `key`; its stdout is collected. */
function holderProcess(script: string, key: string, ttlMs: number): { child: ChildProcess; output: string } {
  const path = fileURLToPath(new URL(script, import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", path, REDIS_URL, key, String(ttlMs)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const holder = { child, output: "" };
  child.stdout?.on("data", (d: Buffer) => {
    holder.output += String(d);
  });
  return holder;
}

/** A lease store on the test's Redis that fails every call, as an unreachable Redis does, while `down`. */
function cutOffStore(): LeaseStore & { down: boolean } {
  const store = new RedisLeaseStore(redis, false);
  const refused = () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379"));
  const cutOff = {
    down: false,
    hold: (key: string, token: string, ttlMs: number) =>
      cutOff.down ? refused() : store.hold(key, token, ttlMs),
    release: (key: string, token: string) => (cutOff.down ? refused() : store.release(key, token)),
  };
  return cutOff;
}

const seg = { replyId: "r", index: 0, text: "hi", last: true };
const target = { channel: "whatsapp", accountId: "default", chatId: "4915112345678@s.whatsapp.net" };

describe("whatsapp account lease: one hub process holds the socket", () => {
  it("a second process waits while the first holds the account, and takes over when it stops", async () => {
    const key = leaseKey(prefix, `a${++n}`);
    const first = await process_(key);
    await waitFor(() => first.adapter.status().state === "connected", "the first process connected");
    const second = await process_(key);
    expect(second.adapter.status()).toMatchObject({
      state: "reconnecting",
      reason: expect.stringMatching(/another hub process .* holds this WhatsApp account/),
    });
    expect(second.wa.sockets).toHaveLength(0);
    await first.adapter.stop();
    await waitFor(() => second.adapter.status().state === "connected", "the second process took over", 3000);
    expect(second.wa.sockets).toHaveLength(1);
    expect(first.wa.sockets).toHaveLength(1);
  });

  it("a process killed with SIGKILL is taken over once its lease runs out", async () => {
    const key = leaseKey(prefix, `b${++n}`);
    const ttlMs = 1200;
    const holder = holderProcess("./lease-holder.ts", key, ttlMs);
    const child = holder.child;
    await waitFor(() => holder.output.startsWith("held"), "the holder taking the lease", 15_000);
    const standby = await process_(key, ttlMs);
    // While the holder lives and renews, the standby never opens a socket (well past one lease time).
    await new Promise((r) => setTimeout(r, ttlMs * 2));
    expect(standby.wa.sockets).toHaveLength(0);
    const killedAt = Date.now();
    child.kill("SIGKILL");
    await waitFor(() => standby.adapter.status().state === "connected", "the takeover", ttlMs * 3);
    expect(Date.now() - killedAt).toBeLessThan(ttlMs + ttlMs / 3 + 1000);
    expect(standby.wa.sockets).toHaveLength(1);
  });

  it("a holder frozen (SIGSTOP) past its lease sends nothing when it wakes; the process that took over does", async () => {
    const key = leaseKey(prefix, `f${++n}`);
    const ttlMs = 1000;
    const holder = holderProcess("./frozen-holder.ts", key, ttlMs);
    const child = holder.child;
    const output = () => holder.output;
    await waitFor(() => (output().match(/SENT/g) ?? []).length >= 3, "the holder sending", 15_000);
    child.kill("SIGSTOP");
    const standby = await process_(key, ttlMs);
    await waitFor(() => standby.adapter.status().state === "connected", "the takeover", ttlMs * 3);
    await new Promise((r) => setTimeout(r, 200));
    const beforeWake = output().length;
    child.kill("SIGCONT");
    await waitFor(() => /REFUSED/.test(output().slice(beforeWake)), "the woken holder trying to send", 5000);
    await new Promise((r) => setTimeout(r, 500));
    expect(output().slice(beforeWake)).not.toMatch(/SENT/);
    await standby.adapter.send(seg, target);
    expect(standby.wa.sent).toHaveLength(1);
  }, 30_000);

  it("a holder that lost its lease (frozen past it) sends nothing and closes its socket", async () => {
    const key = leaseKey(prefix, `c${++n}`);
    const holder = await process_(key);
    await waitFor(() => holder.adapter.status().state === "connected", "connected");
    await holder.adapter.send(seg, target);
    // Another process took the account while this one was frozen.
    await redis.set(key, "other-host:4242:token", "PX", 60_000);
    await waitFor(
      () => /other-host pid 4242/.test(holder.adapter.status().reason ?? ""),
      "the lost lease noticed",
      2000,
    );
    await expect(holder.adapter.send(seg, target)).rejects.toThrow();
    expect(holder.wa.sent).toHaveLength(1);
    expect(holder.wa.socket.ended).toBe(true);
    expect(holder.adapter.status().state).toBe("reconnecting");
  });

  it("a reconnect backoff longer than the lease keeps the account (no handover to a waiting process)", async () => {
    const key = leaseKey(prefix, `g${++n}`);
    const wa = new FakeWhatsApp();
    const holder = new WhatsAppAdapter({
      connector: wa,
      lease: redisLease(new Redis(REDIS_URL), key, 600),
      logger: createLogger({ level: "silent" }),
      reconnect: { initialMs: 2000, maxMs: 2000 },
    });
    adapters.push(holder);
    await holder.start(async () => ({ kind: "accepted" }));
    await waitFor(() => holder.status().state === "connected", "connected");
    wa.socket.close(428);
    const standby = await process_(key, 600);
    await waitFor(() => wa.sockets.length === 2, "the holder reconnecting after its backoff", 5000);
    await waitFor(() => holder.status().state === "connected", "connected again");
    expect(standby.wa.sockets).toHaveLength(0);
  });

  it("a renewal failing for a while (Redis unreachable) is logged once, and its end once", async () => {
    const failing = cutOffStore();
    const { logger, lines } = captureLogs("info");
    const wa = new FakeWhatsApp();
    const adapter = new WhatsAppAdapter({
      connector: wa,
      lease: new ConnectionLease(failing, leaseKey(prefix, `h${++n}`), 300),
      logger,
    });
    adapters.push(adapter);
    await adapter.start(async () => ({ kind: "accepted" }));
    await waitFor(() => adapter.status().state === "connected", "connected");
    failing.down = true;
    // Renewals every 100 ms: about eight fail in this time.
    await new Promise((r) => setTimeout(r, 850));
    failing.down = false;
    await waitFor(() => lines.some((l) => l.includes("renewed again")), "the renewal answering again");
    const said = lines.filter((l) => l.includes("lease renewal failed") || l.includes("renewed again"));
    expect(said).toHaveLength(2);
    expect(said[0]).toContain("ECONNREFUSED");
    expect(wa.sockets).toHaveLength(1);
  });

  it("a 440 after a takeover while this process was cut off from Redis: it stands by, and takes the account back later", async () => {
    const cutOff = cutOffStore();
    const key = leaseKey(prefix, `i${++n}`);
    const wa = new FakeWhatsApp();
    const first = new WhatsAppAdapter({
      connector: wa,
      lease: new ConnectionLease(cutOff, key, 300),
      logger: createLogger({ level: "silent" }),
      reconnect: { initialMs: 20, maxMs: 100 },
    });
    adapters.push(first);
    await first.start(async () => ({ kind: "accepted" }));
    await waitFor(() => first.status().state === "connected", "connected");
    cutOff.down = true;
    // The lease runs out in Redis while the first process cannot renew it; the second one takes the account,
    // and WhatsApp replaces the first connection.
    const second = await process_(key, 300);
    await waitFor(() => second.adapter.status().state === "connected", "the takeover", 3000);
    wa.socket.close(440);
    await waitFor(() => first.status().state === "reconnecting", "the first process waiting");
    expect(first.status().state).not.toBe("failed");
    cutOff.down = false;
    await waitFor(
      () => /another hub process .* holds this WhatsApp account/.test(first.status().reason ?? ""),
      "the first process standing by",
    );
    expect(wa.sockets).toHaveLength(1);
    await second.adapter.stop();
    await waitFor(
      () => first.status().state === "connected",
      "the first process taking the account back",
      3000,
    );
    expect(wa.sockets).toHaveLength(2);
  });

  it("a 440 while the lease is surely this process's is an outside session: it stops and reports", async () => {
    const key = leaseKey(prefix, `j${++n}`);
    const holder = await process_(key);
    await waitFor(() => holder.adapter.status().state === "connected", "connected");
    holder.wa.socket.close(440);
    await waitFor(() => holder.adapter.status().state === "failed", "stopped");
    expect(holder.adapter.status().reason).toMatch(/another WhatsApp Web session replaced this one/);
    await new Promise((r) => setTimeout(r, 300));
    expect(holder.wa.sockets).toHaveLength(1);
  });

  it("a lease not renewed in time is no longer valid by the holder's own clock", async () => {
    const lease = redisLease(redis, leaseKey(prefix, `d${++n}`), 300, false);
    expect((await lease.hold()).held).toBe(true);
    expect(lease.valid()).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(lease.valid()).toBe(false);
  });
});
