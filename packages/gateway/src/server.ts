import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type ChatEvent,
  type DmScope,
  deriveSessionKey,
  type HttpRoute,
  HubError,
  type HubLogger,
  type InboundResult,
  type RunRequest,
  runSender,
} from "@hub/core";
import type { RunRecord, TranscriptEntry } from "@hub/sessions";
import type { Redis } from "ioredis";
import { type RawData, WebSocket, WebSocketServer } from "ws";
import { z } from "zod";
import { AuthFailureLimiter } from "./auth-limiter.js";
import {
  authenticate,
  type GatewayClientGrant,
  METHOD_SCOPES,
  mayTouchSession,
  type Principal,
  type Scope,
  sendRefusal,
} from "./authorization.js";
import { connectNonce } from "./connect-proof.js";
import {
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  enforceConnectionLimits,
  httpServerOptions,
} from "./connection-limits.js";
import { projectHistory } from "./history-projection.js";
import { hostAllowed, hostRefusal } from "./host-check.js";
import { listenError } from "./listen-error.js";
import {
  ChatAbortParamsSchema,
  ChatHistoryParamsSchema,
  ChatSendParamsSchema,
  ConnectParamsSchema,
  type EventFrame,
  METHODS,
  PairingApproveParamsSchema,
  PROTOCOL_VERSION,
  type RequestFrame,
  RequestFrameSchema,
  RequestIdSchema,
  type ResponseFrame,
} from "./protocol.js";
import { securityHeaders } from "./security-headers.js";
import { serveStaticFile } from "./static-files.js";
import type { WebChatMessage } from "./webchat-adapter.js";

/** What the gateway needs from the rest of the hub (wired by the app). */
export interface GatewayDeps {
  redis: Redis;
  prefix: string;
  logger: HubLogger;
  agentId: string;
  dmScope: DmScope;
  /** The web chat's inbound side: `chat.send` hands each message to it. */
  webchat: { receive(message: WebChatMessage): Promise<InboundResult> };
  /** Reads a run record (terminal result of a finished run). */
  runRecord: (runId: string) => Promise<RunRecord | undefined>;
  /** The transcript of the session a key routes to now. */
  history: (sessionKey: string) => Promise<{ sessionId: string; entries: TranscriptEntry[] } | undefined>;
  /**
   * The messages accepted for the session that no run has written to its transcript yet (queued behind a
   * running one, steered into it, collected), in order; none when not given.
   */
  waiting?: (sessionKey: string) => Promise<RunRequest[]>;
  /** Asks whichever process runs `runId` to abort it; false when there is no such run. */
  abort: (runId: string) => Promise<boolean>;
  /** Lists pending pairings; approves one (the sender is told). */
  pairing?: {
    list: () => Promise<unknown[]>;
    /** Senders told to try later in the last hour because too many codes waited, per `channel:accountId`. */
    turnedAway?: () => Promise<Record<string, number>>;
    approve: (channel: string, code: string) => Promise<{ senderId: string } | undefined>;
  };
  /** Subscribes to chat events from every process. */
  subscribeEvents: (handler: (event: ChatEvent) => void, wanted: () => boolean) => Promise<void>;
  /** Told how many connections this gateway has each time that changes (see `ChatListeners.clientsHere`). */
  connectionsChanged?: (count: number) => void;
  /** Publishes a chat event (used for admission failures after the ACK). */
  publishEvent: (event: ChatEvent) => Promise<void>;
  /** The state of every channel account (for `channels.status`). */
  channelStatus?: () => unknown[];
}

/** Options of the gateway server. */
export interface GatewayOptions {
  host: string;
  port: number;
  token: string;
  maxFrameBytes: number;
  /** Folder of the web chat's static files. */
  webRoot?: string;
  /** Pages served at clean paths from `webRoot`, e.g. `{ "/admin/queues": "queues.html" }`. */
  pages?: Readonly<Record<string, string>>;
  /** Extra HTTP endpoints (adapters' webhooks). */
  routes?: HttpRoute[];
  /** More clients with their own tokens, scopes and sessions; the main token has every scope and session. */
  clients?: ReadonlyArray<GatewayClientGrant>;
  /** Browser origins allowed besides the gateway's own. */
  allowedOrigins?: readonly string[];
  /** Host names a gateway listening on loopback answers to besides localhost and IP addresses (see `hostAllowed`). */
  allowedHosts?: readonly string[];
  /** A password the owner can type instead of the token (every scope). */
  password?: string | undefined;
  /** Failed logins per address, shared with HTTP routes that check a token (see `checkBearer`). */
  authFailures?: AuthFailureLimiter;
  /** Caps on open connections and the time their headers may take (defaults: DEFAULT_CONNECTION_LIMITS). */
  connectionLimits?: ConnectionLimits;
  /** How often (ms) each WebSocket client is pinged; one that did not answer the last ping is disconnected. */
  pingIntervalMs?: number;
}

const CONNECT_TIMEOUT_MS = 10_000;

/** What a client whose credentials match nothing is told (the owner's token may come from three places). */
const WRONG_TOKEN =
  "Wrong or missing gateway token: use the owner's token (gateway.token or HUB_GATEWAY_TOKEN when set, else the one the hub printed at first start, kept in the state dir's gateway-token), gateway.password, or a client's token.";
/** Requests one connection may have in flight; more are answered `busy` at once (each holds memory until answered). */
export const MAX_REQUESTS_IN_FLIGHT = 32;
/** Unread bytes the hub keeps for one connection; a client that stops reading past this is cut off. */
export const MAX_UNREAD_BYTES = 8 * 1024 * 1024;

/** Handles one method call of an authenticated client. */
type MethodHandler = (conn: Connection, principal: Principal, params: unknown) => Promise<unknown>;

interface Connection {
  ws: WebSocket;
  authed: boolean;
  /** Who authenticated on this connection (set by connect). */
  principal: Principal | undefined;
  remote: string;
  seq: number;
  sessions: Set<string>;
  /** Runs this connection started: without the `read` scope, their events are the only ones it gets. */
  runs: Set<string>;
  log: HubLogger;
  /** Requests being answered now. */
  inFlight: number;
  /** The nonce `connect.challenge` gave this connection, until its `connect` (single use). */
  nonce?: string | undefined;
  /** Whether the client answered the last ping (see #pingAll). */
  answeredPing: boolean;
}

/** True when `host` is a loopback address: only this machine can reach a gateway listening there. */
export function isLoopbackHost(host: string): boolean {
  return host === "::1" || host === "localhost" || /^127(\.\d{1,3}){3}$/.test(host);
}

class RequestError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The gateway: an HTTP server (web chat page, health) and a WebSocket server
 * speaking the hub protocol on the same port.
 */
export class GatewayServer {
  readonly #http: Server;
  readonly #wss: WebSocketServer;
  readonly #connections = new Set<Connection>();
  /** When a refused host or origin was last said (see #saidOnce). */
  readonly #refusalsSaid = new Map<string, number>();
  readonly #authFailures: AuthFailureLimiter;
  #port = 0;
  #pinger: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: GatewayDeps,
    private readonly options: GatewayOptions,
  ) {
    if (!isLoopbackHost(options.host) && !options.token) {
      throw new HubError(
        "gateway_insecure",
        `Refusing to listen on ${options.host} without a gateway token; set gateway.token or HUB_GATEWAY_TOKEN.`,
      );
    }
    this.#authFailures = options.authFailures ?? new AuthFailureLimiter();
    const limits = options.connectionLimits ?? DEFAULT_CONNECTION_LIMITS;
    this.#http = createServer(httpServerOptions(limits), (req, res) => {
      this.#serveHttp(req, res).catch((error) => {
        deps.logger.error({ err: error }, "http request failed");
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    enforceConnectionLimits(this.#http, limits, deps.logger);
    this.#wss = new WebSocketServer({
      server: this.#http,
      maxPayload: options.maxFrameBytes,
      // Browsers always send Origin: only the gateway's own page (or a configured origin) may connect.
      verifyClient: (
        { origin, req }: { origin: string; req: IncomingMessage },
        done: (ok: boolean, status?: number, message?: string) => void,
      ) => {
        if (!this.#hostOk(req)) {
          this.#saidOnce(`host ${req.headers.host}`, () =>
            deps.logger.warn({ host: req.headers.host }, hostRefusal(req.headers.host ?? "").trim()),
          );
          return done(false, 403, "Host not allowed; see the hub's log");
        }
        if (this.#originOk(origin, req)) return done(true);
        this.#saidOnce(`origin ${origin}`, () =>
          deps.logger.warn(
            { origin, host: req.headers.host },
            "a WebSocket from a page of another origin was refused; if the web chat is served through a proxy that changes the Host header, add that origin to gateway.allowedOrigins",
          ),
        );
        done(false, 403, "Origin not allowed; see the hub's log");
      },
    });
    // Listen errors are reported by start(); the ws server re-emits them and must not crash the process.
    this.#wss.on("error", () => {});
    this.#wss.on("connection", (ws, req) => this.#onConnection(ws, req));
  }

  // A refusal said once a minute per host or origin, and at most 20 a minute in all: a client retrying, or
  // making up a new origin for each try, cannot flood the log.
  #saidOnce(key: string, say: () => void): void {
    const now = Date.now();
    if ((this.#refusalsSaid.get(key) ?? 0) > now - 60_000) return;
    for (const [said, at] of this.#refusalsSaid) if (at <= now - 60_000) this.#refusalsSaid.delete(said);
    if (this.#refusalsSaid.size >= 20) return;
    this.#refusalsSaid.set(key, now);
    say();
  }

  #originOk(origin: string | undefined, req: IncomingMessage): boolean {
    if (!origin) return true;
    if (this.options.allowedOrigins?.includes(origin)) return true;
    try {
      return new URL(origin).host === req.headers.host;
    } catch {
      return false;
    }
  }

  // Only on loopback: a gateway on a public address is reached by the names its operator gave it.
  #hostOk(req: IncomingMessage): boolean {
    if (!isLoopbackHost(this.options.host)) return true;
    return hostAllowed(req.headers.host, this.options.allowedHosts ?? []);
  }

  /** The port actually bound (useful with port 0). */
  get port(): number {
    return this.#port;
  }

  /** Starts listening and routing chat events to clients. */
  async start(): Promise<void> {
    // An event is read (parsed, checked) only while a client is connected that could be routed it.
    await this.deps.subscribeEvents(
      (event) => this.#route(event),
      () => this.#connections.size > 0,
    );
    await new Promise<void>((resolve, reject) => {
      this.#http.once("error", (error: NodeJS.ErrnoException) =>
        reject(listenError(error, this.options.host, this.options.port)),
      );
      this.#http.listen(this.options.port, this.options.host, () => resolve());
    });
    this.#port = (this.#http.address() as AddressInfo).port;
    this.#pinger = setInterval(() => this.#pingAll(), this.options.pingIntervalMs ?? 30_000);
    this.#pinger.unref();
  }

  // A client that did not answer the last ping is gone (half-open: no close ever comes) or stuck: its slot goes.
  #pingAll(): void {
    for (const conn of this.#connections) {
      if (!conn.answeredPing) {
        conn.log.info("websocket client did not answer a ping; disconnected");
        conn.ws.terminate();
        continue;
      }
      conn.answeredPing = false;
      conn.ws.ping();
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#pinger);
    for (const c of this.#connections) c.ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.#http.close(() => resolve()));
  }

  async #serveHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://localhost");
    // Every answer carries them, the operator routes' (probes, metrics, control API) too.
    for (const [name, value] of Object.entries(securityHeaders(req.headers.host))) res.setHeader(name, value);
    const route = this.options.routes?.find((r) => r.method === req.method && r.path === url.pathname);
    if (!route?.anyHost && !this.#hostOk(req)) {
      req.resume();
      res.writeHead(403, { "content-type": "text/plain" }).end(hostRefusal(req.headers.host ?? ""));
      return;
    }
    if (route) return route.handle(req, res);
    if (url.pathname === "/healthz") {
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ ok: true, protocol: PROTOCOL_VERSION }));
      return;
    }
    if (req.method !== "GET" || !this.options.webRoot) {
      res.writeHead(404).end("not found");
      return;
    }
    const page = this.options.pages?.[url.pathname];
    await serveStaticFile(this.options.webRoot, page ? `/${page}` : url.pathname, res);
  }

  #onConnection(ws: WebSocket, req: IncomingMessage): void {
    const conn: Connection = {
      principal: undefined,
      remote: req.socket.remoteAddress ?? "?",
      ws,
      authed: false,
      seq: 0,
      sessions: new Set(),
      runs: new Set(),
      log: this.deps.logger.child({ remote: req.socket.remoteAddress }),
      inFlight: 0,
      answeredPing: true,
    };
    this.#connections.add(conn);
    this.deps.connectionsChanged?.(this.#connections.size);
    const timer = setTimeout(() => {
      if (!conn.authed)
        this.#reject(conn, null, "connect_timeout", "Send a connect request with your token first.");
    }, CONNECT_TIMEOUT_MS);
    ws.on("message", (data, isBinary) => {
      this.#onFrame(conn, data, isBinary).catch((error) =>
        conn.log.error({ err: error }, "frame handling failed"),
      );
    });
    ws.on("close", () => {
      clearTimeout(timer);
      this.#connections.delete(conn);
      this.deps.connectionsChanged?.(this.#connections.size);
    });
    ws.on("error", (error) => conn.log.warn({ err: error }, "websocket error"));
    ws.on("pong", () => {
      conn.answeredPing = true;
    });
  }

  #send(conn: Connection, frame: ResponseFrame | EventFrame): void {
    if (conn.ws.readyState !== WebSocket.OPEN) return;
    // A client that stops reading would make the hub hold every answer for it; it is cut off instead.
    if (conn.ws.bufferedAmount > MAX_UNREAD_BYTES) {
      conn.log.warn(
        { unreadBytes: conn.ws.bufferedAmount },
        "gateway client stopped reading; connection closed",
      );
      conn.ws.terminate();
      return;
    }
    conn.ws.send(JSON.stringify(frame));
  }

  #error(conn: Connection, id: RequestFrame["id"] | null, code: string, message: string): void {
    this.#send(conn, { type: "res", id, ok: false, error: { code, message } });
  }

  #reject(conn: Connection, id: RequestFrame["id"] | null, code: string, message: string): void {
    this.#error(conn, id, code, message);
    conn.ws.close(4001, code);
  }

  async #onFrame(conn: Connection, data: RawData, isBinary: boolean): Promise<void> {
    let frame: RequestFrame;
    let json: unknown;
    try {
      if (isBinary) throw new Error("binary frames are not supported");
      json = JSON.parse(data.toString());
      frame = RequestFrameSchema.parse(json);
    } catch (error) {
      conn.log.warn({ err: frameProblem(error) }, "malformed frame");
      const message = 'Malformed frame: send JSON like {"type":"req","id":1,"method":"...","params":{...}}.';
      // A frame wrong elsewhere but with a usable id is answered under it: its client waits for that id.
      const id = RequestIdSchema.safeParse((json as { id?: unknown } | null)?.id).data ?? null;
      if (!conn.authed) return this.#reject(conn, id, "bad_frame", message);
      return this.#error(conn, id, "bad_frame", message);
    }
    if (!conn.authed) return this.#connect(conn, frame);
    if (conn.ws.readyState !== WebSocket.OPEN) return;
    if (conn.inFlight >= MAX_REQUESTS_IN_FLIGHT)
      return this.#error(
        conn,
        frame.id,
        "busy",
        `At most ${MAX_REQUESTS_IN_FLIGHT} requests per connection are answered at once; wait for answers before sending more.`,
      );
    conn.inFlight++;
    try {
      const payload = await this.#call(conn, frame);
      this.#send(conn, { type: "res", id: frame.id, ok: true, payload });
    } catch (error) {
      if (error instanceof RequestError) return this.#error(conn, frame.id, error.code, error.message);
      if (error instanceof z.ZodError) {
        return this.#error(
          conn,
          frame.id,
          "bad_params",
          `Invalid params for ${frame.method}: ${error.issues.map((i) => `${i.path.join(".") || "params"}: ${i.message}`).join("; ")}.`,
        );
      }
      conn.log.error({ err: error, method: frame.method }, "request failed");
      this.#error(conn, frame.id, "internal", "The hub could not handle this request; see its log.");
    } finally {
      conn.inFlight--;
    }
  }

  // Before `connect`, a client may ask for a nonce to prove its token with instead of sending it.
  #challenge(conn: Connection, frame: RequestFrame): void {
    conn.nonce = connectNonce();
    this.#send(conn, { type: "res", id: frame.id, ok: true, payload: { nonce: conn.nonce } });
  }

  // The first frame: only `connect`, with a token, password or proof, limited per address on failures.
  #connect(conn: Connection, frame: RequestFrame): void {
    if (frame.method === "connect.challenge") {
      this.#challenge(conn, frame);
      return;
    }
    if (frame.method !== "connect") {
      this.#reject(
        conn,
        frame.id,
        "unauthorized",
        "The first request must be connect with your gateway token.",
      );
      return;
    }
    const nonce = conn.nonce;
    conn.nonce = undefined;
    if (this.#authFailures.blocked(conn.remote)) {
      conn.log.warn("gateway client refused: too many failed attempts from this address");
      this.#reject(
        conn,
        frame.id,
        "too_many_attempts",
        "Too many failed connection attempts from this address; wait a minute and check the token.",
      );
      return;
    }
    const params = ConnectParamsSchema.safeParse(frame.params);
    const auth = params.success ? params.data.auth : undefined;
    const principal = auth
      ? authenticate(auth, {
          token: this.options.token,
          password: this.options.password,
          clients: this.options.clients,
          agentId: this.deps.agentId,
          ownerSessionKey: this.#defaultSessionKey(),
          nonce,
        })
      : undefined;
    if (!principal) {
      // Only a credential that was wrong counts as a guess: a connect without one guessed nothing (as a
      // request without an Authorization header over HTTP), and must not lock the address out.
      if (auth) this.#authFailures.fail(conn.remote);
      conn.log.warn("gateway client refused: wrong or missing token");
      const unasked = auth && "proof" in auth && nonce === undefined;
      this.#reject(
        conn,
        frame.id,
        "unauthorized",
        unasked
          ? "A proof answers the nonce connect.challenge gave this connection; ask for one first."
          : WRONG_TOKEN,
      );
      return;
    }
    conn.authed = true;
    conn.principal = principal;
    conn.log = conn.log.child({ client: principal.name });
    this.#send(conn, {
      type: "res",
      id: frame.id,
      ok: true,
      payload: { protocol: PROTOCOL_VERSION, methods: METHODS },
    });
  }

  async #call(conn: Connection, frame: RequestFrame): Promise<unknown> {
    const principal = conn.principal;
    if (!principal) throw new RequestError("unauthorized", "Send a connect request with your token first.");
    if (frame.method === "connect")
      throw new RequestError("already_connected", "This connection is already authenticated.");
    // Own keys only: "toString" or "__proto__" are the object's, not methods.
    const needed = Object.hasOwn(METHOD_SCOPES, frame.method)
      ? (METHOD_SCOPES as Record<string, Scope | undefined>)[frame.method]
      : undefined;
    if (!needed)
      throw new RequestError(
        "unknown_method",
        `Unknown method ${JSON.stringify(frame.method)}; known methods: ${METHODS.join(", ")}.`,
      );
    if (!principal.scopes.includes(needed)) {
      throw new RequestError(
        "forbidden",
        `This client lacks the "${needed}" scope needed for ${frame.method}.`,
      );
    }
    const handler = (this.#methods as Record<string, MethodHandler | undefined>)[frame.method];
    if (!handler)
      throw new RequestError(
        "unknown_method",
        `Unknown method ${JSON.stringify(frame.method)}; known methods: ${METHODS.join(", ")}.`,
      );
    return handler(conn, principal, frame.params);
  }

  // The protocol's methods after `connect`, by name (each checked against its scope before it runs).
  readonly #methods = {
    health: async () => ({ ok: true }),
    "channels.status": async (_conn: Connection, principal: Principal) => ({
      channels: channelsFor(principal.owner, this.deps.channelStatus?.() ?? []),
    }),
    "chat.send": (conn: Connection, principal: Principal, params: unknown) =>
      this.#chatSend(conn, principal, ChatSendParamsSchema.parse(params)),
    "chat.history": (conn: Connection, principal: Principal, params: unknown) =>
      this.#chatHistory(conn, principal, ChatHistoryParamsSchema.parse(params ?? {})),
    "chat.abort": (_conn: Connection, principal: Principal, params: unknown) =>
      this.#chatAbort(principal, ChatAbortParamsSchema.parse(params)),
    "pairing.list": async () => {
      const pairing = this.#pairing();
      return { pending: await pairing.list(), turnedAway: (await pairing.turnedAway?.()) ?? {} };
    },
    "pairing.approve": async (_conn: Connection, _principal: Principal, params: unknown) => {
      const { channel, code } = PairingApproveParamsSchema.parse(params);
      const approved = await this.#pairing().approve(channel, code);
      if (!approved)
        throw new RequestError("not_found", `No pending pairing with code ${code} on ${channel}.`);
      return { channel, senderId: approved.senderId, status: "approved" };
    },
  };

  #pairing(): NonNullable<GatewayDeps["pairing"]> {
    if (!this.deps.pairing)
      throw new RequestError("unavailable", "Pairing is not available on this gateway.");
    return this.deps.pairing;
  }

  async #chatAbort(principal: Principal, { runId }: z.infer<typeof ChatAbortParamsSchema>): Promise<unknown> {
    if (!principal.owner) {
      const record = await this.deps.runRecord(runId);
      if (!record || !mayTouchSession(principal, record.sessionKey))
        throw new RequestError("forbidden", `This client may not abort the run ${runId}.`);
    }
    if (!(await this.deps.abort(runId)))
      throw new RequestError("not_found", `No run ${runId}: it never existed, or it ended long ago.`);
    return { runId, status: "abort_requested" };
  }

  #defaultSessionKey(): string {
    return deriveSessionKey({
      agentId: this.deps.agentId,
      channel: "webchat",
      chatType: "direct",
      chatId: "owner",
      peerId: "owner",
      dmScope: this.deps.dmScope,
    });
  }

  // Admission (one atomic step) runs before the ACK: an ACKed message is durably queued, and a retry
  // with the same idempotencyKey (= runId) finds its run record, whatever crashed in between.
  async #chatSend(
    conn: Connection,
    principal: Principal,
    params: z.infer<typeof ChatSendParamsSchema>,
  ): Promise<unknown> {
    const runId = params.idempotencyKey;
    const sessionKey = params.sessionKey ?? principal.ownSessionKey;
    const refusal = sendRefusal(principal, sessionKey, params.text);
    if (refusal) throw new RequestError("forbidden", refusal);
    conn.sessions.add(sessionKey);
    if (!principal.scopes.includes("read")) conn.runs.add(runId);
    // The web chat adapter turns the message into adapter fields and answers what admission did.
    const result = await this.deps.webchat.receive({
      runId,
      sessionKey,
      text: params.text,
      sender: { id: principal.senderId, name: principal.owner ? "Owner" : principal.name },
      commandAuthorized: true,
      floodExempt: principal.owner,
    });
    if (result.kind === "duplicate") return this.#recordedRun(conn, principal, runId, sessionKey);
    if (result.kind === "accepted") return { runId, sessionKey, status: "accepted" };
    if (result.kind === "rejected" || result.kind === "retry") {
      conn.log.error(
        { reason: result.reason, runId, sessionKey, channel: "webchat" },
        "chat.send admission failed",
      );
      if (result.kind === "rejected") throw new RequestError("rejected", result.reason);
      throw new RequestError("unavailable", "The hub could not accept the message right now; send it again.");
    }
    const text = `Not accepted: ${result.reason}.`;
    await this.deps
      .publishEvent({ runId, sessionKey, seq: 0, state: "error", text })
      .catch((error) => conn.log.warn({ err: error, runId }, "could not publish the rejection"));
    return { runId, sessionKey, status: "rejected", error: text };
  }

  // A repeated chat.send: the run's record answers (in flight, or its recorded result).
  async #recordedRun(
    conn: Connection,
    principal: Principal,
    runId: string,
    sessionKey: string,
  ): Promise<unknown> {
    const record = await this.deps.runRecord(runId);
    const key = record?.sessionKey ?? sessionKey;
    const refusal = recordRefusal(principal, key, record);
    if (refusal) {
      // chat.send subscribed this write-only connection to the run before admission said it was known.
      conn.runs.delete(runId);
      throw new RequestError("forbidden", refusal);
    }
    conn.sessions.add(key);
    if (!record || record.status === "running" || record.status === "queued")
      return { runId, sessionKey: key, status: "in_flight" };
    return {
      runId,
      sessionKey: key,
      status: record.status,
      ...(record.text !== undefined ? { text: record.text } : {}),
      ...(record.error ? { error: record.error } : {}),
    };
  }

  async #chatHistory(
    conn: Connection,
    principal: Principal,
    params: z.infer<typeof ChatHistoryParamsSchema>,
  ): Promise<unknown> {
    const sessionKey = params.sessionKey ?? principal.ownSessionKey;
    if (!mayTouchSession(principal, sessionKey))
      throw new RequestError("forbidden", `This client may not read the session ${sessionKey}.`);
    conn.sessions.add(sessionKey);
    const [found, waiting] = await Promise.all([
      this.deps.history(sessionKey),
      this.deps.waiting?.(sessionKey) ?? [],
    ]);
    const messages = projectHistory(found?.entries ?? [], params.limit, waiting);
    return { sessionKey, sessionId: found?.sessionId ?? null, messages };
  }

  // Live events are `read`: a client without it hears only the runs it started (the answers to its own messages).
  #route(event: ChatEvent): void {
    for (const conn of this.#connections) {
      if (!conn.authed || !conn.sessions.has(event.sessionKey)) continue;
      if (!conn.principal?.scopes.includes("read")) {
        if (!conn.runs.has(event.runId)) continue;
        // A run's terminal event is its last.
        if (event.state !== "delta") conn.runs.delete(event.runId);
      }
      this.#send(conn, { type: "event", event: "chat", payload: event, seq: conn.seq++ });
    }
  }
}

/**
 * Why a repeated chat.send may not be told about the run its key names, or undefined when it may. A known
 * key must not open someone else's session, and a client without `read` (which hears only the answers to
 * its own messages) is told a run's answer, and given its events, only if it sent that message. A record
 * that does not say who sent it (written before its sender was kept) proves nothing.
 */
function recordRefusal(
  principal: Principal,
  sessionKey: string,
  record: RunRecord | undefined,
): string | undefined {
  if (!mayTouchSession(principal, sessionKey))
    return "This idempotency key belongs to a session this client may not use.";
  if (!record || principal.scopes.includes("read")) return undefined;
  if (record.sender !== runSender({ channel: "webchat", sender: { id: principal.senderId } }))
    return "This idempotency key belongs to another client's message; use a new key.";
  return undefined;
}

/** Channel states as a client may see them: a device's link code only for the owner (it links the account). */
function channelsFor(owner: boolean, channels: unknown[]): unknown[] {
  if (owner) return channels;
  return channels.map((c) => {
    const entry = c as { status?: Record<string, unknown> } | undefined;
    return entry?.status ? { ...entry, status: { ...entry.status, link: undefined } } : c;
  });
}

/**
 * Why a frame could not be read, for the log. Not JSON.parse's message: it quotes the text where parsing
 * stopped, which in a garbled `connect` is the client's token or password.
 */
function frameProblem(error: unknown): string {
  if (error instanceof SyntaxError) return "not JSON";
  if (error instanceof z.ZodError)
    return error.issues.map((i) => `${i.path.join(".") || "frame"}: ${i.message}`).join("; ");
  return error instanceof Error ? error.message : String(error);
}
