import { createHmac, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";
import { FakeApi, type RecordedCall, readBody, startHttpServer } from "../kit/index.js";

// A local fake of Slack for the real @slack/bolt and @slack/web-api clients: the Web API
// (POST {apiUrl}{method}, Bearer token, form or JSON bodies, `{ ok, error }` answers, HTTP 429
// with Retry-After), Events API deliveries signed exactly as Slack signs them (`v0=` + HMAC-SHA256
// of `v0:<timestamp>:<raw body>`, retry headers), and Socket Mode (apps.connections.open, then a
// WebSocket with hello, events_api envelopes and envelope acks). It keeps every message it saw or
// accepted, so replies, reactions and history lookups behave like on Slack.

/** Options of `startFakeSlack`. */
export interface FakeSlackOptions {
  botToken?: string;
  appToken?: string;
  signingSecret?: string;
  botUserId?: string;
  botId?: string;
  teamId?: string;
  /** A fixed port for the Web API (Slack coming back at the address the adapter knows); default a free one. */
  port?: number;
}

/** One Web API call the fake received, in arrival order. */
export interface SlackCall extends RecordedCall {
  /** Set once answered: the `error` of an `ok: false` answer, or `ratelimited` for a 429. */
  error?: string;
}

/** A message in a conversation (sent by a user through an event, or posted by the bot). */
export interface SlackMessage {
  channel: string;
  ts: string;
  text: string;
  user: string;
  bot_id?: string;
  thread_ts?: string;
  metadata?: { event_type: string; event_payload?: Record<string, unknown> };
  reactions: Map<string, Set<string>>;
}

/** An injected failure: an `ok: false` error, or HTTP 429 with Retry-After seconds. */
export type SlackFailure = { error: string } | { status: 429; retryAfter: number };

/** How a delivery of an event is signed and which retry headers it carries. */
export interface DeliveryOptions {
  retryNum?: number;
  retryReason?: string;
  /** Use this signature instead of the correct one. */
  signature?: string;
  /** Sign with this Unix timestamp (seconds) instead of now. */
  timestamp?: number;
}

/** A running fake Slack. */
export interface FakeSlack {
  /** Pass as Bolt's `clientOptions.slackApiUrl` (ends with `/`). */
  readonly apiUrl: string;
  readonly botToken: string;
  readonly appToken: string;
  readonly signingSecret: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly teamId: string;
  readonly calls: SlackCall[];
  callsOf(method: string): SlackCall[];
  /** Resolves with the first answered call of `method` matching `predicate`; rejects after `timeoutMs`. */
  waitForCall(
    method: string,
    predicate?: (call: SlackCall) => boolean,
    timeoutMs?: number,
  ): Promise<SlackCall>;
  /** Implements an extra Web API method; the handler's object is merged into `{ ok: true }`. */
  stub(method: string, handler: (params: Record<string, unknown>) => unknown): void;
  /** Messages the bot posted (successful chat.postMessage), optionally in one channel, in order. */
  posted(channel?: string): SlackMessage[];
  /** The message with this `ts` in a channel, if Slack has it. */
  messageAt(channel: string, ts: string): SlackMessage | undefined;
  /** Reactions currently on a message. */
  reactionsOn(channel: string, ts: string): string[];
  /** The next `times` calls of `method` fail like this. */
  failNext(method: string, failure: SlackFailure, times?: number): void;
  /** The next call of `method` is answered (and, for chat.postMessage, carried out) only after `ms`. */
  slowNext(method: string, ms: number): void;
  /** Where Events API deliveries go (the hub's `/slack/events`). */
  eventsUrl: string | undefined;
  /** A user's message as Slack stores it; returns its `ts` (use it in the event). */
  userMessage(channel: string, user: string, text: string, threadTs?: string): SlackMessage;
  /** Wraps an event in an `event_callback` envelope as Slack does. */
  envelope(event: Record<string, unknown>): Record<string, unknown>;
  /** POSTs an envelope to `eventsUrl`, signed like Slack. */
  deliver(
    envelope: Record<string, unknown>,
    options?: DeliveryOptions,
  ): Promise<{ status: number; body: string }>;
  /** POSTs a raw body to `eventsUrl`, signed like Slack. */
  deliverRaw(body: string, options?: DeliveryOptions): Promise<{ status: number; body: string }>;
  /** Sends an envelope over the Socket Mode connection; resolves true when acked, false after `timeoutMs`. */
  deliverSocket(
    envelope: Record<string, unknown>,
    options?: { retryAttempt?: number; timeoutMs?: number },
  ): Promise<boolean>;
  /** Asks the connected Socket Mode client to reconnect, like Slack does (`type: "disconnect"`). */
  disconnectSocket(reason?: "refresh_requested" | "link_disabled" | "warning"): void;
  /** How many Socket Mode connections were opened so far. */
  readonly socketConnections: number;
  /** Whether a Socket Mode client is connected. */
  readonly socketConnected: boolean;
  close(): Promise<void>;
}

type Params = Record<string, unknown>;
type Answer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };

const ok = (body: Record<string, unknown> = {}): Answer => ({ status: 200, body: { ok: true, ...body } });
const fail = (error: string): Answer => ({ status: 200, body: { ok: false, error } });

async function readParams(req: IncomingMessage): Promise<Params | undefined> {
  const raw = (await readBody(req)).toString("utf8");
  const type = String(req.headers["content-type"] ?? "");
  try {
    if (type.includes("application/json")) return raw === "" ? {} : (JSON.parse(raw) as Params);
    return Object.fromEntries(new URLSearchParams(raw));
  } catch {
    return undefined;
  }
}

/** A form value that Slack accepts as JSON text or as an object (JSON bodies). */
function jsonParam(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const truthy = (v: unknown): boolean => v === true || v === "true" || v === "1";

/** Starts a fake Slack (Web API + Socket Mode) on a free local port. */
export async function startFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const botToken = options.botToken ?? "xoxb-test-token";
  const appToken = options.appToken ?? "xapp-1-test-token";
  const signingSecret = options.signingSecret ?? "fake-signing-secret-0123456789";
  const botUserId = options.botUserId ?? "UBOT0001";
  const botId = options.botId ?? "BBOT0001";
  const teamId = options.teamId ?? "T0TEAM001";
  const appId = "A0APP0001";
  const api = new FakeApi<SlackCall, SlackFailure>({ name: "fake slack" });
  const messages: SlackMessage[] = [];
  const slow = new Map<string, number>();
  const sockets = new Set<WebSocket>();
  const acks = new Map<string, () => void>();
  let seq = 0;
  let eventSeq = 0;
  let closed = false;

  const nextTs = (): string => {
    seq += 1;
    return `${Math.floor(Date.now() / 1000)}.${String(seq).padStart(6, "0")}`;
  };
  const find = (channel: string, ts: string) => messages.find((m) => m.channel === channel && m.ts === ts);
  const view = (m: SlackMessage, withMetadata: boolean): Record<string, unknown> => ({
    type: "message",
    ts: m.ts,
    text: m.text,
    user: m.user,
    ...(m.bot_id ? { bot_id: m.bot_id, app_id: appId } : {}),
    ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}),
    ...(withMetadata && m.metadata ? { metadata: m.metadata } : {}),
  });

  function postMessage(p: Params): Answer {
    const channel = str(p.channel);
    if (!channel) return fail("channel_not_found");
    const text = typeof p.text === "string" ? p.text : "";
    if (text.trim() === "" && p.blocks === undefined) return fail("no_text");
    if (text.length > 40_000) return fail("msg_too_long");
    const metadata = jsonParam(p.metadata) as SlackMessage["metadata"] | undefined;
    const threadTs = str(p.thread_ts);
    const message: SlackMessage = {
      channel,
      ts: nextTs(),
      text,
      user: botUserId,
      bot_id: botId,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      ...(metadata?.event_type ? { metadata } : {}),
      reactions: new Map(),
    };
    messages.push(message);
    return ok({ channel, ts: message.ts, message: view(message, true) });
  }

  function react(p: Params, add: boolean): Answer {
    const channel = str(p.channel);
    const ts = str(p.timestamp);
    const name = str(p.name);
    if (!channel || !ts || !name) return fail("invalid_arguments");
    const message = find(channel, ts);
    if (!message) return fail("message_not_found");
    const users = message.reactions.get(name) ?? new Set<string>();
    if (add && users.has(botUserId)) return fail("already_reacted");
    if (!add && !users.has(botUserId)) return fail("no_reaction");
    if (add) users.add(botUserId);
    else users.delete(botUserId);
    if (users.size === 0) message.reactions.delete(name);
    else message.reactions.set(name, users);
    return ok();
  }

  function history(p: Params, thread: boolean): Answer {
    const channel = str(p.channel);
    if (!channel) return fail("channel_not_found");
    const oldest = Number(str(p.oldest) ?? "0");
    const parent = str(p.ts);
    if (thread && !parent) return fail("thread_not_found");
    const withMetadata = truthy(p.include_all_metadata);
    const inChannel = messages.filter((m) => m.channel === channel && Number(m.ts) >= oldest);
    const picked = thread
      ? inChannel.filter((m) => m.ts === parent || m.thread_ts === parent)
      : inChannel.filter((m) => !m.thread_ts || m.thread_ts === m.ts).reverse();
    return ok({ messages: picked.map((m) => view(m, withMetadata)), has_more: false });
  }

  const methods: Record<string, (p: Params, token: string) => Answer> = {
    "auth.test": () =>
      ok({
        url: "https://hub-test.slack.com/",
        team: "Hub Test",
        user: "hubbot",
        team_id: teamId,
        user_id: botUserId,
        bot_id: botId,
        is_enterprise_install: false,
      }),
    "chat.postMessage": postMessage,
    "reactions.add": (p) => react(p, true),
    "reactions.remove": (p) => react(p, false),
    "conversations.history": (p) => history(p, false),
    "conversations.replies": (p) => history(p, true),
    "conversations.info": (p) => {
      const id = str(p.channel);
      if (!id) return fail("channel_not_found");
      const im = id.startsWith("D");
      return ok({
        channel: { id, name: im ? undefined : `chan-${id.toLowerCase()}`, is_im: im, is_channel: !im },
      });
    },
    "users.info": (p) => {
      const id = str(p.user);
      if (!id) return fail("user_not_found");
      const name = `user-${id.toLowerCase()}`;
      return ok({
        user: {
          id,
          team_id: teamId,
          name,
          real_name: `User ${id}`,
          is_bot: false,
          profile: { display_name: `User ${id}` },
        },
      });
    },
    "assistant.threads.setStatus": (p) =>
      str(p.channel_id) && str(p.thread_ts) && typeof p.status === "string"
        ? ok()
        : fail("invalid_arguments"),
  };

  async function answerCall(
    method: string,
    req: IncomingMessage,
    out: { settled: SlackCall | undefined },
  ): Promise<Answer> {
    const auth = String(req.headers.authorization ?? "");
    const params = await readParams(req);
    const token = auth.startsWith("Bearer ") ? auth.slice(7) : str(params?.token);
    const call = api.record({ method, params: params ?? {}, at: Date.now() });
    out.settled = call;
    const answer = await (async (): Promise<Answer> => {
      if (!params) return fail("invalid_form_data");
      const wait = slow.get(method);
      if (wait !== undefined) {
        slow.delete(method);
        await new Promise((r) => setTimeout(r, wait));
      }
      const failure = api.takeFailure(method);
      if (failure && "status" in failure) {
        return {
          status: 429,
          body: { ok: false, error: "ratelimited" },
          headers: { "retry-after": String(failure.retryAfter) },
        };
      }
      if (failure) return fail(failure.error);
      if (method === "apps.connections.open") {
        if (token !== appToken)
          return fail(token?.startsWith("xapp-") ? "invalid_auth" : "not_allowed_token_type");
        return ok({ url: `ws://127.0.0.1:${wsPort}/link/?ticket=${randomUUID()}&app_id=${appId}` });
      }
      if (token !== botToken) return fail(token ? "invalid_auth" : "not_authed");
      const handler = methods[method];
      return handler ? handler(params, token) : fail("unknown_method");
    })();
    call.error =
      answer.status === 429 ? "ratelimited" : answer.body.ok ? undefined : String(answer.body.error);
    return answer;
  }

  const http = await startHttpServer(
    async (req, res: ServerResponse) => {
      const match = /^\/api\/([\w.]+)$/.exec(new URL(req.url ?? "/", "http://fake").pathname);
      if (req.method !== "POST" || !match) {
        res.writeHead(404).end();
        return;
      }
      const call = { settled: undefined as SlackCall | undefined };
      const answer = await answerCall(match[1] ?? "", req, call);
      if (!res.destroyed && !res.writableEnded) {
        res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
        res.end(JSON.stringify(answer.body));
      }
      if (call.settled) api.settle(call.settled);
    },
    undefined,
    options.port ?? 0,
  );
  // Socket Mode: apps.connections.open hands out a URL on this WebSocket server (like wss://wss-primary.slack.com/link/).
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const wsPort = (wss.address() as AddressInfo).port;
  let socketConnections = 0;
  wss.on("connection", (ws, req) => {
    if (!(req.url ?? "").startsWith("/link/")) return void ws.close(1008, "unknown path");
    socketConnections += 1;
    sockets.add(ws);
    const ping = setInterval(() => ws.ping(), 2000);
    ws.on("close", () => {
      sockets.delete(ws);
      clearInterval(ping);
    });
    ws.on("message", (data) => {
      const { envelope_id } = JSON.parse(String(data)) as { envelope_id?: string };
      if (envelope_id) acks.get(envelope_id)?.();
    });
    ws.send(
      JSON.stringify({
        type: "hello",
        num_connections: sockets.size,
        debug_info: { host: "applink-fake", build_number: 1, approximate_connection_time: 18060 },
        connection_info: { app_id: appId },
      }),
    );
  });

  const fake: FakeSlack = {
    apiUrl: `${http.url}/api/`,
    botToken,
    appToken,
    signingSecret,
    botUserId,
    botId,
    teamId,
    calls: api.calls,
    eventsUrl: undefined,
    callsOf: (method) => api.callsOf(method),
    waitForCall: (method, predicate, timeoutMs) => api.waitForCall(method, predicate, timeoutMs),
    stub: (method, handler) => api.stub(method, handler),
    posted: (channel) =>
      messages.filter((m) => m.bot_id === botId && (channel === undefined || m.channel === channel)),
    messageAt: (channel, ts) => find(channel, ts),
    reactionsOn: (channel, ts) => [...(find(channel, ts)?.reactions.keys() ?? [])],
    failNext: (method, failure, times = 1) => api.failNext(method, failure, times),
    slowNext: (method, ms) => void slow.set(method, ms),
    userMessage: (channel, user, text, threadTs) => {
      const message: SlackMessage = {
        channel,
        ts: nextTs(),
        text,
        user,
        ...(threadTs ? { thread_ts: threadTs } : {}),
        reactions: new Map(),
      };
      messages.push(message);
      return message;
    },
    envelope: (event) => {
      eventSeq += 1;
      return {
        token: "legacy-verification-token",
        team_id: teamId,
        api_app_id: appId,
        event: { event_ts: event.ts, ...event },
        type: "event_callback",
        event_id: `Ev${String(eventSeq).padStart(9, "0")}`,
        event_time: Math.floor(Date.now() / 1000),
        authorizations: [
          {
            enterprise_id: null,
            team_id: teamId,
            user_id: botUserId,
            is_bot: true,
            is_enterprise_install: false,
          },
        ],
        is_ext_shared_channel: false,
        event_context: `4-${Buffer.from(`ctx${eventSeq}`).toString("base64url")}`,
      };
    },
    deliver: (envelope, o) => fake.deliverRaw(JSON.stringify(envelope), o),
    deliverRaw: async (body, o = {}) => {
      if (!fake.eventsUrl) throw new Error("fake slack: set eventsUrl before delivering events");
      const timestamp = String(o.timestamp ?? Math.floor(Date.now() / 1000));
      const signature =
        o.signature ??
        `v0=${createHmac("sha256", signingSecret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": signature,
        "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
      };
      if (o.retryNum !== undefined) headers["x-slack-retry-num"] = String(o.retryNum);
      if (o.retryReason !== undefined) headers["x-slack-retry-reason"] = o.retryReason;
      const res = await fetch(fake.eventsUrl, { method: "POST", headers, body });
      return { status: res.status, body: await res.text() };
    },
    deliverSocket: (envelope, o = {}) =>
      new Promise<boolean>((resolve) => {
        const [ws] = sockets;
        if (!ws) return resolve(false);
        const envelopeId = randomUUID();
        const timer = setTimeout(() => {
          acks.delete(envelopeId);
          resolve(false);
        }, o.timeoutMs ?? 5000);
        acks.set(envelopeId, () => {
          clearTimeout(timer);
          acks.delete(envelopeId);
          resolve(true);
        });
        ws.send(
          JSON.stringify({
            envelope_id: envelopeId,
            payload: envelope,
            type: "events_api",
            accepts_response_payload: false,
            retry_attempt: o.retryAttempt ?? 0,
            retry_reason: o.retryAttempt ? "timeout" : "",
          }),
        );
      }),
    disconnectSocket: (reason = "refresh_requested") => {
      for (const ws of sockets) {
        ws.send(JSON.stringify({ type: "disconnect", reason, debug_info: { host: "applink-fake" } }));
      }
    },
    get socketConnections() {
      return socketConnections;
    },
    get socketConnected() {
      return sockets.size > 0;
    },
    close: async () => {
      if (closed) return;
      closed = true;
      for (const ws of sockets) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await http.close();
    },
  };
  return fake;
}
