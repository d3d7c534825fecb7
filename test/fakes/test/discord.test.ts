import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { type FakeDiscord, type FakeDiscordOptions, routeTemplate, startFakeDiscord } from "../src/index.js";

const fakes: FakeDiscord[] = [];
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  for (const f of fakes.splice(0)) await f.close();
});

async function fake(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const f = await startFakeDiscord(options);
  fakes.push(f);
  return f;
}

const rest = (f: FakeDiscord, method: string, path: string, body?: unknown, token = f.token) =>
  fetch(`${f.restApi}/v10${path}`, {
    method,
    headers: { authorization: `Bot ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

type Frame = { op: number; d: Record<string, unknown> | null; s: number | null; t: string | null };

/** A raw gateway client: its frames in order, and the close code. */
async function connect(url: string) {
  const ws = new WebSocket(`${url}?v=10&encoding=json`);
  sockets.push(ws);
  const frames: Frame[] = [];
  let closed: number | undefined;
  ws.on("message", (data) => frames.push(JSON.parse(String(data)) as Frame));
  ws.on("close", (code) => {
    closed = code;
  });
  await new Promise((resolve) => ws.once("open", resolve));
  const next = async (pred: (f: Frame) => boolean, ms = 2000): Promise<Frame> => {
    const until = Date.now() + ms;
    for (;;) {
      const found = frames.find(pred);
      if (found) return found;
      if (Date.now() > until)
        throw new Error(`no matching frame; got ${JSON.stringify(frames.map((f) => f.t ?? f.op))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const closeCode = async () => {
    for (let i = 0; i < 200 && closed === undefined; i++) await new Promise((r) => setTimeout(r, 10));
    return closed;
  };
  return {
    ws,
    frames,
    next,
    closeCode,
    send: (op: number, d: unknown) => ws.send(JSON.stringify({ op, d })),
  };
}

describe("fake discord REST", () => {
  it("GET /gateway/bot gives the gateway URL and session start limits; a wrong token gets 401", async () => {
    const f = await fake();
    const info = (await (await rest(f, "GET", "/gateway/bot")).json()) as Record<string, unknown>;
    expect(info).toMatchObject({
      url: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+\/gateway$/),
      shards: 1,
      session_start_limit: { total: 1000, remaining: 999, max_concurrency: 1 },
    });
    const denied = await rest(f, "GET", "/gateway/bot", undefined, "nope");
    expect(denied.status).toBe(401);
    expect(await denied.json()).toEqual({ message: "401: Unauthorized", code: 0 });
  });

  it("messages: 2,000 characters, nonces of 25, enforce_nonce returns the earlier message", async () => {
    const f = await fake();
    const path = `/channels/${f.channelId}/messages`;
    const tooLong = await rest(f, "POST", path, { content: "x".repeat(2001) });
    expect(tooLong.status).toBe(400);
    expect(await tooLong.json()).toMatchObject({
      code: 50035,
      errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH" }] } },
    });
    expect((await rest(f, "POST", path, { content: "x", nonce: "n".repeat(26) })).status).toBe(400);
    const a = (await (
      await rest(f, "POST", path, { content: "one", nonce: "abc", enforce_nonce: true })
    ).json()) as { id: string; nonce: string };
    const b = (await (
      await rest(f, "POST", path, { content: "one", nonce: "abc", enforce_nonce: true })
    ).json()) as { id: string };
    expect(b.id).toBe(a.id);
    expect(a.nonce).toBe("abc");
    // Without enforce_nonce the nonce is only echoed: a second message is made.
    await rest(f, "POST", path, { content: "two", nonce: "xyz" });
    await rest(f, "POST", path, { content: "two", nonce: "xyz" });
    expect(f.sent(f.channelId).map((m) => m.message.content)).toEqual(["one", "two", "two"]);
    expect(f.api.callsOf("POST /channels/:id/messages")).toHaveLength(6);
  });

  it("enforce_nonce only looks back a few minutes: after the window the same nonce makes a new message", async () => {
    const f = await fake({ nonceWindowMs: 100 });
    const path = `/channels/${f.channelId}/messages`;
    await rest(f, "POST", path, { content: "one", nonce: "late", enforce_nonce: true });
    await new Promise((r) => setTimeout(r, 150));
    await rest(f, "POST", path, { content: "one", nonce: "late", enforce_nonce: true });
    expect(f.sent(f.channelId)).toHaveLength(2);
  });

  it("a 429 carries Retry-After, the X-RateLimit-* headers and a retry_after body; global ones say so", async () => {
    const f = await fake();
    f.failNext("POST /channels/:id/messages", { status: 429, retryAfter: 1.5 });
    f.failNext("POST /channels/:id/messages", { status: 429, retryAfter: 2, global: true });
    const user = await rest(f, "POST", `/channels/${f.channelId}/messages`, { content: "x" });
    expect(user.status).toBe(429);
    expect(user.headers.get("retry-after")).toBe("2");
    expect(user.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(user.headers.get("x-ratelimit-reset-after")).toBe("1.5");
    expect(user.headers.get("x-ratelimit-scope")).toBe("user");
    expect(user.headers.get("x-ratelimit-global")).toBeNull();
    expect(await user.json()).toEqual({
      message: "You are being rate limited.",
      retry_after: 1.5,
      global: false,
    });
    const global = await rest(f, "POST", `/channels/${f.channelId}/messages`, { content: "x" });
    expect(global.headers.get("x-ratelimit-global")).toBe("true");
    expect(await global.json()).toMatchObject({ global: true, retry_after: 2 });
    expect(f.sent()).toEqual([]);
  });

  it("route templates name ids and tokens", () => {
    expect(routeTemplate("/channels/123/messages")).toBe("/channels/:id/messages");
    expect(routeTemplate("/interactions/123/aW50ZX/callback")).toBe("/interactions/:id/:token/callback");
    expect(routeTemplate("/webhooks/123/tok/messages/@original")).toBe(
      "/webhooks/:id/:token/messages/@original",
    );
  });
});

describe("fake discord gateway", () => {
  it("HELLO, IDENTIFY -> READY + GUILD_CREATE, heartbeats acknowledged; a silent connection stops acknowledging", async () => {
    const f = await fake({ heartbeatIntervalMs: 1000 });
    const c = await connect(f.gateway.url());
    expect((await c.next((x) => x.op === 10)).d).toEqual({ heartbeat_interval: 1000 });
    c.send(2, { token: f.token, intents: 37377, properties: {}, shard: [0, 1] });
    const ready = await c.next((x) => x.t === "READY");
    expect(ready).toMatchObject({
      op: 0,
      s: 1,
      d: { v: 10, user: { id: f.bot.id }, session_id: expect.any(String) },
    });
    expect((ready.d as { resume_gateway_url: string }).resume_gateway_url).toBe(f.gateway.url());
    expect(await c.next((x) => x.t === "GUILD_CREATE")).toMatchObject({
      s: 2,
      d: { id: f.guildId, unavailable: false },
    });
    c.send(1, 2);
    await c.next((x) => x.op === 11);
    f.gateway.goSilent();
    const acks = c.frames.filter((x) => x.op === 11).length;
    c.send(1, 2);
    await new Promise((r) => setTimeout(r, 200));
    expect(c.frames.filter((x) => x.op === 11).length).toBe(acks);
  });

  it("RESUME replays the dispatches missed after the given sequence, then RESUMED; an unknown session gets op 9", async () => {
    const f = await fake();
    const a = await connect(f.gateway.url());
    a.send(2, { token: f.token, intents: 37377, properties: {} });
    const ready = await a.next((x) => x.t === "READY");
    await a.next((x) => x.t === "GUILD_CREATE");
    a.ws.terminate();
    await a.closeCode();
    const missed = f.userMessage({ channelId: f.dmChannelId, content: "while away" });
    const b = await connect(f.gateway.url());
    b.send(6, { token: f.token, session_id: (ready.d as { session_id: string }).session_id, seq: 2 });
    const replayed = await b.next((x) => x.t === "MESSAGE_CREATE");
    expect(replayed).toMatchObject({ s: 3, d: { id: missed.id, channel_type: 1 } });
    expect(await b.next((x) => x.t === "RESUMED")).toMatchObject({ s: 4 });
    const c = await connect(f.gateway.url());
    c.send(6, { token: f.token, session_id: "nope", seq: 1 });
    expect(await c.next((x) => x.op === 9)).toMatchObject({ d: false });
  });

  it("closes 4004 on a wrong token and 4014 when the Message Content intent is not allowed", async () => {
    const f = await fake({ messageContentAllowed: false });
    const bad = await connect(f.gateway.url());
    bad.send(2, { token: "wrong", intents: 1, properties: {} });
    expect(await bad.closeCode()).toBe(4004);
    const privileged = await connect(f.gateway.url());
    privileged.send(2, { token: f.token, intents: 1 | 32768, properties: {} });
    expect(await privileged.closeCode()).toBe(4014);
  });
});
