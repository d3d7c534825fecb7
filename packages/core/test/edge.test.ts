import { createHmac } from "node:crypto";
import { getEventListeners } from "node:events";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  Backoff,
  ByteBudget,
  ChannelStatusCell,
  captureLogs,
  classifySendFailure,
  createLogger,
  describeError,
  type InboundResult,
  isPermanentStatus,
  PermanentSendError,
  RateLimitedError,
  retryAfterMs,
  sameHmacSha256,
  sameSecret,
  sleep,
  waitAtMost,
  webhookRoute,
} from "../src/index.js";

describe("webhookRoute", () => {
  let server: Server;
  let url = "";
  const seen: unknown[] = [];
  let next: InboundResult | Error = { kind: "accepted" };
  beforeAll(async () => {
    const route = webhookRoute({
      path: "/hook",
      maxBytes: 1000,
      verify: ({ req, rawBody }) => {
        const sig = String(req.headers["x-signature"] ?? "");
        return sameHmacSha256("shh", rawBody, sig);
      },
      handle: async (body) => {
        seen.push(body);
        if (next instanceof Error) throw next;
        return next;
      },
      logger: createLogger({ level: "silent" }),
    });
    server = createServer((req, res) => void route.handle(req, res));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  const post = (body: string, sign = true) =>
    fetch(url, {
      method: "POST",
      body,
      headers: sign ? { "x-signature": createHmac("sha256", "shh").update(body).digest("hex") } : {},
    }).then((r) => r.status);

  it("answers 401 to a bad signature, 413 to a large body, 200 to a signed non-JSON body, and handles nothing of them", async () => {
    expect(await post('{"a":1}', false)).toBe(401);
    expect(await post(JSON.stringify({ a: "x".repeat(2000) }))).toBe(413);
    // Signed by the platform yet unreadable: acknowledged (a redelivery would carry the same bytes).
    expect(await post("{not json")).toBe(200);
    expect(await post("")).toBe(200);
    expect(await post("a=1&b=2")).toBe(200);
    expect(await post("{not json", false)).toBe(401);
    expect(seen).toEqual([]);
  });

  it("with answerWithinMs, a handling that hangs (Redis down) is answered 503 in time, and it goes on", async () => {
    let finish: (result: InboundResult) => void = () => {};
    const handled = new Promise<InboundResult>((resolve) => {
      finish = resolve;
    });
    const { logger, records } = captureLogs("info");
    const route = webhookRoute({
      path: "/slow",
      verify: () => true,
      handle: () => handled,
      answerWithinMs: 300,
      logger,
    });
    const slow = createServer((req, res) => void route.handle(req, res));
    await new Promise<void>((r) => slow.listen(0, "127.0.0.1", () => r()));
    try {
      const port = (slow.address() as AddressInfo).port;
      const startedAt = Date.now();
      const res = await fetch(`http://127.0.0.1:${port}/slow`, { method: "POST", body: '{"update_id":1}' });
      expect(res.status).toBe(503);
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(records).toEqual([
        expect.objectContaining({ msg: "webhook update not accepted now; the platform will retry" }),
      ]);
      expect(String(records[0]?.reason)).toMatch(/not taken within 0.3 s \(is Redis reachable\?\)/);
      // Its handling was not abandoned: what it takes later makes the platform's redelivery a duplicate.
      finish({ kind: "accepted" });
    } finally {
      await new Promise<void>((r) => slow.close(() => r()));
    }
  });

  it("logs a refused call once, with the why its verify gave", async () => {
    const { logger, records } = captureLogs("info");
    const route = webhookRoute({
      path: "/why",
      verify: () => "not signed by the platform: stale timestamp",
      handle: async () => ({ kind: "accepted" }),
      logger,
    });
    const refusing = createServer((req, res) => void route.handle(req, res));
    await new Promise<void>((r) => refusing.listen(0, "127.0.0.1", () => r()));
    try {
      const port = (refusing.address() as AddressInfo).port;
      const res = await fetch(`http://127.0.0.1:${port}/why`, { method: "POST", body: "{}" });
      expect(res.status).toBe(401);
      expect(records).toEqual([
        expect.objectContaining({
          msg: "webhook call failed verification; refused",
          why: "not signed by the platform: stale timestamp",
        }),
      ]);
    } finally {
      await new Promise<void>((r) => refusing.close(() => r()));
    }
  });

  it("holds at most its budget of body bytes received from callers not verified yet; past it answers 503, and frees it after", async () => {
    const budget = new ByteBudget(2000);
    const route = webhookRoute({
      path: "/budget",
      maxBytes: 1000,
      unverifiedBudget: budget,
      verify: ({ req, rawBody }) => sameHmacSha256("shh", rawBody, String(req.headers["x-signature"] ?? "")),
      handle: async () => ({ kind: "accepted" }),
      logger: createLogger({ level: "silent" }),
    });
    const budgeted = createServer((req, res) => void route.handle(req, res));
    await new Promise<void>((r) => budgeted.listen(0, "127.0.0.1", () => r()));
    const port = (budgeted.address() as AddressInfo).port;
    // A request that declares a 1,000-byte body and has sent `sent` bytes of it so far.
    const slow = (sent: number) => {
      const req = request({
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/budget",
        headers: { "content-length": "1000" },
      });
      const status = new Promise<number>((resolve) => {
        req.on("response", (res) => resolve(res.statusCode ?? 0));
        req.on("error", () => resolve(0));
      });
      req.flushHeaders();
      if (sent > 0) req.write("x".repeat(sent));
      return { status, finish: () => req.end("x".repeat(1000 - sent)) };
    };
    const signedCall = async () => {
      const body = "{}";
      const signature = createHmac("sha256", "shh").update(body).digest("hex");
      return (
        await fetch(`http://127.0.0.1:${port}/budget`, {
          method: "POST",
          body,
          headers: { "x-signature": signature },
        })
      ).status;
    };
    try {
      // Declared bodies that never come hold nothing: a signed call still gets through.
      const idle = Array.from({ length: 10 }, () => slow(0));
      await new Promise((r) => setTimeout(r, 100));
      expect(budget.held).toBe(0);
      expect(await signedCall()).toBe(200);
      // Bytes received are held until the body is read and checked.
      const first = slow(900);
      const second = slow(900);
      await vi.waitFor(() => expect(budget.held).toBe(1800));
      const third = slow(900);
      expect(await third.status).toBe(503);
      first.finish();
      second.finish();
      // Read and refused (unsigned): their bytes are given back.
      expect([await first.status, await second.status]).toEqual([401, 401]);
      expect(budget.held).toBe(0);
      expect(await signedCall()).toBe(200);
      for (const call of idle) call.finish();
      expect(await Promise.all(idle.map((call) => call.status))).toEqual(idle.map(() => 401));
    } finally {
      budgeted.closeAllConnections();
      await new Promise<void>((r) => budgeted.close(() => r()));
    }
  });

  it("acknowledges accepted, duplicate, ignored and rejected with 200; only retry (or a throw) is 503", async () => {
    const statuses: number[] = [];
    for (const result of [
      { kind: "accepted" },
      { kind: "duplicate" },
      { kind: "ignored", reason: "policy" },
      { kind: "rejected", reason: "malformed" },
      { kind: "retry", reason: "redis down" },
      new Error("boom"),
    ] as Array<InboundResult | Error>) {
      next = result;
      statuses.push(await post('{"n":1}'));
    }
    expect(statuses).toEqual([200, 200, 200, 200, 503, 503]);
    expect(seen).toHaveLength(6);
  });
});

describe("edge helpers", () => {
  it("compares secrets and HMAC signatures", () => {
    const sig = createHmac("sha256", "k").update("v0:1:body").digest("hex");
    expect(sameHmacSha256("k", "v0:1:body", sig)).toBe(true);
    expect(sameHmacSha256("k", "v0:1:bodyx", sig)).toBe(false);
    expect(sameHmacSha256("k", "v0:1:body", "zz")).toBe(false);
    expect(sameHmacSha256("k", "v0:1:body", sig.slice(2))).toBe(false);
    expect(sameSecret("a", "a")).toBe(true);
  });

  it("reads retry-after values and classifies send failures", () => {
    expect(retryAfterMs(5)).toBe(5000);
    expect(retryAfterMs("2")).toBe(2000);
    expect(retryAfterMs(0.25)).toBe(250);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 1000, 7_000)).toBe(3000);
    expect(retryAfterMs(undefined, 1500)).toBe(1500);
    expect(retryAfterMs("soon", 1500)).toBe(1500);
    // Past an hour (or a timer's 2^31 ms, which Node fires at once): an hour, then another try.
    expect(retryAfterMs(3_000_000)).toBe(3_600_000);
    expect(new RateLimitedError(3e9).retryAfterMs).toBe(3_600_000);
    expect(new RateLimitedError(Number.NaN).retryAfterMs).toBe(1000);
    // Slack's `Retry-After: 0` (and `0.5`, which its client reads as 0): no advice, not "at once".
    expect(new RateLimitedError(retryAfterMs("0")).retryAfterMs).toBe(1000);
    expect(new RateLimitedError(0.4).retryAfterMs).toBe(1);
    expect([400, 401, 403, 404, 408, 429, 500, 502].map(isPermanentStatus)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
      false,
      false,
    ]);
    const limited = classifySendFailure({ status: 429, retryAfter: 3, description: "slow down" });
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect((limited as RateLimitedError).retryAfterMs).toBe(3000);
    expect(classifySendFailure({ status: 403, description: "blocked" })).toBeInstanceOf(PermanentSendError);
    const transient = new Error("bad gateway");
    expect(classifySendFailure({ status: 502, description: "bad gateway" }, transient)).toBe(transient);
  });

  it("sleeps until aborted, backs off up to a cap, and describes errors in one line", async () => {
    const aborter = new AbortController();
    const started = Date.now();
    setTimeout(() => aborter.abort(), 30);
    await sleep(10_000, aborter.signal);
    expect(Date.now() - started).toBeLessThan(2000);
    const backoff = new Backoff(100, 1000, 0);
    expect([1, 2, 3, 4, 5].map(() => backoff.next())).toEqual([100, 200, 400, 800, 1000]);
    backoff.reset();
    expect(backoff.next()).toBe(100);
    const error = Object.assign(new Error("connect refused", { cause: new Error("ECONNREFUSED") }), {
      code: "E1",
    });
    expect(describeError(error)).toBe("E1: connect refused (ECONNREFUSED)");
    expect(describeError("plain")).toBe("plain");
  });
});

describe("waitAtMost", () => {
  it("ends with the work, at the time cap or at the abort, and leaves no listener on the signal", async () => {
    const stop = new AbortController();
    // Many waits on one long-lived signal, each for work that ends at once: none stays behind.
    for (let i = 0; i < 20; i++) expect(await waitAtMost(Promise.resolve(i), 60_000, stop.signal)).toBe(true);
    expect(await waitAtMost(Promise.reject(new Error("failed")), 60_000, stop.signal)).toBe(true);
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
    const never = new Promise(() => {});
    expect(await waitAtMost(never, 20, stop.signal)).toBe(false);
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
    setTimeout(() => stop.abort(), 20);
    const started = Date.now();
    expect(await waitAtMost(never, 60_000, stop.signal)).toBe(false);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("ChannelStatusCell", () => {
  it("keeps the last error once the account connects again; a repeat keeps its time, a new error replaces it", () => {
    const cell = new ChannelStatusCell();
    cell.set("connecting");
    expect(cell.get().lastError).toBeUndefined();
    cell.set("reconnecting", { reason: "refused", nextRetryAt: 1 });
    const first = cell.get().lastError;
    expect(first).toEqual({ reason: "refused", at: expect.any(Number) });
    cell.set("reconnecting", { reason: "refused", nextRetryAt: 2 });
    expect(cell.get().lastError).toBe(first);
    cell.set("connected");
    expect(cell.get()).toMatchObject({ state: "connected", lastError: first });
    expect(cell.get().reason).toBeUndefined();
    cell.set("failed", { reason: "token refused" });
    expect(cell.get().lastError?.reason).toBe("token refused");
  });
});
