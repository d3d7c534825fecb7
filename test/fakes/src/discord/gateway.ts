import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  GatewayCloseCodes,
  GatewayDispatchEvents,
  GatewayIntentBits,
  GatewayOpcodes,
} from "discord-api-types/v10";
import { type WebSocket, WebSocketServer } from "ws";

// The gateway half of the fake Discord (https://discord.com/developers/docs/events/gateway): HELLO,
// IDENTIFY -> READY + GUILD_CREATE, heartbeats and their ACKs, sequence numbers, RESUME with replay of
// missed dispatches, INVALID_SESSION, RECONNECT, closes on demand and a "zombie" mode in which a
// connection goes silent (no ACKs, no dispatches) like a half-dead TCP connection.

/** One gateway session (what RESUME reattaches to): its sequence and every dispatch sent in it. */
interface GatewaySession {
  id: string;
  seq: number;
  log: Array<{ s: number; t: string; d: unknown }>;
  connection: GatewayConnection | undefined;
}

/** One WebSocket connection of the bot. */
interface GatewayConnection {
  ws: WebSocket;
  session: GatewaySession | undefined;
  /** Silent: heartbeats are not acknowledged and dispatches are not sent (a zombie connection). */
  silent: boolean;
}

/** What the gateway needs from the rest of the fake. */
export interface GatewayHost {
  token: string;
  /** The READY payload (without session fields) and the GUILD_CREATE payloads sent after it. */
  readyData(): { user: unknown; guilds: Array<{ id: string }>; application: unknown };
  guildCreates(): unknown[];
  /** Whether the app may use the privileged Message Content intent (else IDENTIFY with it closes 4014). */
  messageContentAllowed: boolean;
  heartbeatIntervalMs: number;
  /** False: connections are accepted but never greeted with HELLO (a stuck gateway). */
  hello: boolean;
}

/** Counters a test can assert on. */
export interface GatewayStats {
  connections: number;
  identifies: number;
  resumes: number;
  heartbeats: number;
  /** Close codes the bot's client sent when it closed a connection itself (e.g. 4200 on a zombie). */
  clientCloses: number[];
  /** The intents of the last IDENTIFY. */
  intents: number | undefined;
}

const PRIVILEGED =
  GatewayIntentBits.MessageContent | GatewayIntentBits.GuildMembers | GatewayIntentBits.GuildPresences;

/** The fake gateway, attached to the fake's HTTP server (path `/gateway`). */
export class FakeDiscordGateway {
  readonly stats: GatewayStats = {
    connections: 0,
    identifies: 0,
    resumes: 0,
    heartbeats: 0,
    clientCloses: [],
    intents: undefined,
  };
  /** Changes the next HELLO's `d` into what it returns (a malformed frame for a test); used once. */
  nextHello: ((d: Record<string, unknown>) => unknown) | undefined;
  /** Changes the next READY's `d` into what it returns (a malformed frame for a test); used once. */
  nextReady: ((d: Record<string, unknown>) => unknown) | undefined;
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #sessions = new Map<string, GatewaySession>();
  readonly #connections = new Set<GatewayConnection>();
  #nextSession = 1;
  /** Dispatches made while no session exists yet (before the first IDENTIFY). */
  readonly #early: Array<{ t: string; d: unknown }> = [];

  constructor(
    readonly host: GatewayHost,
    readonly url: () => string,
  ) {}

  /** Takes over an HTTP upgrade request for `/gateway`. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#open(ws, req));
  }

  #open(ws: WebSocket, req: IncomingMessage): void {
    const conn: GatewayConnection = { ws, session: undefined, silent: false };
    this.#connections.add(conn);
    this.stats.connections++;
    ws.on("close", (code) => {
      this.#connections.delete(conn);
      if (conn.session?.connection === conn) conn.session.connection = undefined;
      if (code !== 1005 && code !== 1006) this.stats.clientCloses.push(code);
    });
    ws.on("error", () => {});
    const params = new URL(req.url ?? "/", "http://x").searchParams;
    if (params.get("v") !== "10" || params.get("encoding") !== "json") {
      ws.close(GatewayCloseCodes.InvalidAPIVersion, "Invalid API version");
      return;
    }
    if (this.host.hello) {
      const hello = { heartbeat_interval: this.host.heartbeatIntervalMs };
      const change = this.nextHello;
      this.nextHello = undefined;
      this.#send(conn, { op: GatewayOpcodes.Hello, d: change ? change(hello) : hello });
    }
    ws.on("message", (raw, isBinary) => this.#receive(conn, isBinary ? undefined : raw.toString()));
  }

  #send(
    conn: GatewayConnection,
    payload: { op: number; d: unknown; s?: number | null; t?: string | null },
  ): void {
    if (conn.ws.readyState !== conn.ws.OPEN) return;
    conn.ws.send(JSON.stringify({ s: null, t: null, ...payload }));
  }

  #receive(conn: GatewayConnection, text: string | undefined): void {
    let frame: { op?: unknown; d?: unknown };
    try {
      frame = JSON.parse(text ?? "") as { op?: unknown; d?: unknown };
    } catch {
      conn.ws.close(GatewayCloseCodes.DecodeError, "Error while decoding payload.");
      return;
    }
    const d = (frame.d ?? {}) as Record<string, unknown>;
    switch (frame.op) {
      case GatewayOpcodes.Heartbeat:
        this.stats.heartbeats++;
        if (!conn.silent) this.#send(conn, { op: GatewayOpcodes.HeartbeatAck, d: null });
        return;
      case GatewayOpcodes.Identify:
        this.#identify(conn, d);
        return;
      case GatewayOpcodes.Resume:
        this.#resume(conn, d);
        return;
      case GatewayOpcodes.PresenceUpdate:
      case GatewayOpcodes.RequestGuildMembers:
        return;
      default:
        conn.ws.close(GatewayCloseCodes.UnknownOpcode, "Unknown opcode.");
    }
  }

  #identify(conn: GatewayConnection, d: Record<string, unknown>): void {
    if (conn.session)
      return void conn.ws.close(GatewayCloseCodes.AlreadyAuthenticated, "Already authenticated.");
    if (d.token !== this.host.token && d.token !== `Bot ${this.host.token}`)
      return void conn.ws.close(GatewayCloseCodes.AuthenticationFailed, "Authentication failed.");
    const intents = typeof d.intents === "number" ? d.intents : Number.NaN;
    if (!Number.isInteger(intents) || intents < 0)
      return void conn.ws.close(GatewayCloseCodes.InvalidIntents, "Invalid intent(s).");
    if (!this.host.messageContentAllowed && (intents & PRIVILEGED) !== 0)
      return void conn.ws.close(GatewayCloseCodes.DisallowedIntents, "Disallowed intent(s).");
    this.stats.identifies++;
    this.stats.intents = intents;
    const session: GatewaySession = {
      id: `fake-session-${this.#nextSession++}`,
      seq: 0,
      log: [],
      connection: conn,
    };
    this.#sessions.set(session.id, session);
    conn.session = session;
    const ready = this.host.readyData();
    const readyD = {
      v: 10,
      user: ready.user,
      guilds: ready.guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: session.id,
      resume_gateway_url: this.url(),
      shard: [0, 1],
      application: ready.application,
    };
    const change = this.nextReady;
    this.nextReady = undefined;
    this.#dispatchTo(session, GatewayDispatchEvents.Ready, change ? change(readyD) : readyD);
    for (const guild of this.host.guildCreates())
      this.#dispatchTo(session, GatewayDispatchEvents.GuildCreate, guild);
    for (const early of this.#early.splice(0)) this.#dispatchTo(session, early.t, early.d);
  }

  #resume(conn: GatewayConnection, d: Record<string, unknown>): void {
    const session = typeof d.session_id === "string" ? this.#sessions.get(d.session_id) : undefined;
    if (d.token !== this.host.token && d.token !== `Bot ${this.host.token}`)
      return void conn.ws.close(GatewayCloseCodes.AuthenticationFailed, "Authentication failed.");
    if (!session || typeof d.seq !== "number" || d.seq > session.seq) {
      // Not resumable: the client must identify again.
      this.#send(conn, { op: GatewayOpcodes.InvalidSession, d: false });
      return;
    }
    this.stats.resumes++;
    const old = session.connection;
    session.connection = conn;
    conn.session = session;
    if (old && old !== conn) old.ws.terminate();
    const seq = d.seq;
    for (const event of session.log) {
      if (event.s > seq) this.#send(conn, { op: GatewayOpcodes.Dispatch, ...event });
    }
    this.#dispatchTo(session, GatewayDispatchEvents.Resumed, null);
  }

  #dispatchTo(session: GatewaySession, t: string, d: unknown): void {
    session.seq++;
    const event = { s: session.seq, t, d };
    session.log.push(event);
    const conn = session.connection;
    if (conn && !conn.silent) this.#send(conn, { op: GatewayOpcodes.Dispatch, ...event });
  }

  /**
   * Sends a dispatch event to every session (the bot's live connection, or queued for its RESUME).
   * Before the first IDENTIFY it waits and is sent after READY.
   */
  dispatch(t: string, d: unknown): void {
    if (this.#sessions.size === 0) {
      this.#early.push({ t, d });
      return;
    }
    const latest = [...this.#sessions.values()].at(-1);
    if (latest) this.#dispatchTo(latest, t, d);
  }

  /** Sends a raw text frame on every open connection (e.g. a malformed dispatch). */
  sendRaw(text: string): void {
    for (const conn of this.#connections) if (!conn.silent) conn.ws.send(text);
  }

  /**
   * Closes every connection: 1006 drops the TCP connection without a close frame, 1005 closes
   * without a status code, anything else sends that close code.
   */
  close(code: number, reason = ""): void {
    for (const conn of this.#connections) {
      if (code === 1006) conn.ws.terminate();
      else if (code === 1005) conn.ws.close();
      else conn.ws.close(code, reason);
    }
  }

  /** Asks the client to reconnect and resume (op 7). */
  requestReconnect(): void {
    for (const conn of this.#connections) this.#send(conn, { op: GatewayOpcodes.Reconnect, d: null });
  }

  /** Invalidates every session (op 9); `resumable: false` forces a new IDENTIFY. */
  invalidateSessions(resumable: boolean): void {
    for (const conn of this.#connections)
      this.#send(conn, { op: GatewayOpcodes.InvalidSession, d: resumable });
    if (!resumable) this.#sessions.clear();
  }

  /** The current connections go silent: no heartbeat ACKs, no dispatches (a zombie connection). */
  goSilent(): void {
    for (const conn of this.#connections) conn.silent = true;
  }

  /** Number of open connections that completed IDENTIFY or RESUME and are not silent. */
  get liveConnections(): number {
    return [...this.#connections].filter((c) => c.session && !c.silent && c.ws.readyState === c.ws.OPEN)
      .length;
  }

  /** Terminates every connection and stops accepting new ones. */
  shutdown(): void {
    for (const conn of this.#connections) conn.ws.terminate();
    this.#wss.close();
  }
}
