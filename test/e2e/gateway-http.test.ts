import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { startTestHub, type TestHub } from "../support/hub.js";

let hub: TestHub;
beforeAll(async () => {
  hub = await startTestHub(
    { gateway: { maxConnections: 8, maxConnectionsPerAddress: 5, headersTimeoutMs: 800 } },
    "gwhttp",
  );
});
afterAll(async () => hub.dispose());

/** GET over a fresh connection from a chosen loopback address (127.0.0.0/8 all reach the gateway). */
function get(
  path: string,
  from = "127.0.0.1",
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: hub.port, path, localAddress: from, agent: false, headers },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** A connection that trickles one header line every 100 ms and never finishes its request. */
async function trickler(from: string): Promise<{ socket: Socket; closedAt: Promise<number> }> {
  const socket = connect({ host: "127.0.0.1", port: hub.port, localAddress: from });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  socket.on("error", () => {});
  socket.write("GET /healthz HTTP/1.1\r\n");
  let i = 0;
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(`X-Slow-${i++}: a\r\n`);
  }, 100);
  const closedAt = new Promise<number>((resolve) =>
    socket.once("close", () => {
      clearInterval(timer);
      resolve(Date.now());
    }),
  );
  return { socket, closedAt };
}

/** Whether the server closes a fresh connection from `from` within `ms` (refused at once). */
async function closedQuickly(from: string, ms = 300): Promise<boolean> {
  const { socket, closedAt } = await trickler(from);
  const closed = await Promise.race([
    closedAt.then(() => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), ms)),
  ]);
  socket.destroy();
  return closed;
}

describe("gateway HTTP hardening", () => {
  it("the web chat page, its files, the probes and the control API carry the security headers", async () => {
    for (const path of [
      "/",
      "/app.js",
      "/missing",
      "/healthz",
      "/readyz",
      "/metrics",
      "/api/control/overview",
    ]) {
      const { headers } = await get(path);
      expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
      expect(headers["content-security-policy"]).toContain("script-src 'self'");
      expect(headers["x-frame-options"]).toBe("DENY");
      expect(headers["x-content-type-options"]).toBe("nosniff");
      expect(headers["referrer-policy"]).toBe("no-referrer");
    }
  });

  it("caps connections per address and in total, and closes connections whose headers trickle in", async () => {
    const started = Date.now();
    const held = await Promise.all(Array.from({ length: 5 }, () => trickler("127.0.0.1")));
    // A sixth from the same address is closed at once; another address still gets its health check.
    expect(await closedQuickly("127.0.0.1")).toBe(true);
    expect((await get("/healthz", "127.0.0.2")).status).toBe(200);
    const more = await Promise.all(Array.from({ length: 3 }, () => trickler("127.0.0.3")));
    // Eight open in total: a ninth, from a fresh address, is closed at once.
    expect(await closedQuickly("127.0.0.4")).toBe(true);
    // The tricklers never finish their headers: each is closed after the headers timeout, not kept forever.
    const closed = await Promise.all([...held, ...more].map((t) => t.closedAt));
    for (const at of closed) expect(at - started).toBeLessThan(5000);
    expect((await get("/healthz", "127.0.0.1")).status).toBe(200);
  }, 15_000);

  it("counts wrong tokens on the control API against the address's failed logins, shared with connect", async () => {
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const from = "127.0.0.21";
    // No Authorization header guesses nothing: the control page asks for the token without using any up.
    for (let i = 0; i < 8; i++) expect((await get("/api/control/overview", from)).status).toBe(401);
    expect((await get("/api/control/overview", from, bearer(hub.token))).status).toBe(200);
    for (let i = 0; i < 5; i++)
      expect((await get("/api/control/overview", from, bearer(`wrong-token-${i}`))).status).toBe(401);
    // Used up: the right token is refused too, over HTTP and at the WebSocket's connect.
    expect((await get("/api/control/overview", from, bearer(hub.token))).status).toBe(429);
    expect((await get("/api/control/queues", from, bearer(hub.token))).status).toBe(429);
    const ws = new WebSocket(`ws://127.0.0.1:${hub.port}/`, { localAddress: from });
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const answer = new Promise<string>((resolve) => ws.once("message", (data) => resolve(String(data))));
    ws.send(
      JSON.stringify({ type: "req", id: 1, method: "connect", params: { auth: { token: hub.token } } }),
    );
    expect(JSON.parse(await answer)).toMatchObject({ ok: false, error: { code: "too_many_attempts" } });
    ws.close();
    // Another address is not affected.
    expect((await get("/api/control/overview", "127.0.0.22", bearer(hub.token))).status).toBe(200);
  });
});
