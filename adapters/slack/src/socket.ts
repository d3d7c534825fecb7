import { Backoff, describeError, type HubLogger, type InboundResult } from "@hub/core";
import type { Logger } from "@slack/bolt";
import { SocketModeClient } from "@slack/socket-mode";
import type { AppsConnectionsOpenResponse } from "@slack/web-api";
import type { SlackEnvelope } from "./events-http.js";

/** What the Socket Mode connection needs. */
export interface SocketConnectionOptions {
  appToken: string;
  apiUrl: string;
  logger: HubLogger;
  boltLogger: Logger;
  /** Processes one event; `retry` leaves it unacknowledged, so Slack redelivers it. */
  process(envelope: SlackEnvelope): Promise<InboundResult>;
  onState(state: "connecting" | "connected" | "reconnecting", reason?: string): void;
}

/** An `events_api` frame whose payload the client library could not read (it would throw, unhandled). */
const UNREADABLE_PAYLOAD = { type: "event_callback", event: { type: "hub_unreadable_payload" } };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The Socket Mode client with its frame handler guarded: the library reads `payload.event.type`
 * of every `events_api` frame and throws (an unhandled rejection) on one without it. Such a frame
 * gets a placeholder payload instead, so it is acknowledged and dropped like any unreadable event,
 * never redelivered forever; an unparsable frame is dropped with a log line.
 */
class GuardedSocketModeClient extends SocketModeClient {
  onUnreadable: (reason: string) => void = () => {};
  onReconnectFailed: (reason: string, retryInMs: number) => void = () => {};
  #connectedOnce = false;
  #stopped = false;
  /** Why the connection is going away, when Slack said (a `disconnect` frame); read once by the reconnect. */
  #leaving: string | undefined;
  #retry: NodeJS.Timeout | undefined;
  readonly #backoff = new Backoff(1000, 60_000);

  /**
   * The library reconnects by calling `start()` without catching its failure: a network error from
   * `apps.connections.open` (Slack unreachable right then) would be an unhandled rejection, which
   * ends the process, and the library would not try again. A reconnect that fails is caught here
   * and tried again with capped backoff until Slack answers or the connection is stopped.
   */
  override async start(): Promise<AppsConnectionsOpenResponse> {
    if (!this.#connectedOnce) {
      const first = await super.start();
      this.#connectedOnce = true;
      return first;
    }
    try {
      const again = await super.start();
      this.#backoff.reset();
      return again;
    } catch (error) {
      if (!this.#stopped) {
        const wait = this.#backoff.next();
        this.onReconnectFailed(describeError(error), wait);
        this.#retry = setTimeout(() => void this.start(), wait);
      }
      // The library chains nothing useful on this promise; the retry above carries on.
      return new Promise<AppsConnectionsOpenResponse>(() => {});
    }
  }

  /** Why the connection went away (Slack's words when it said; else that it closed), once. */
  takeLeavingReason(): string {
    const reason = this.#leaving ?? "the connection to Slack closed";
    this.#leaving = undefined;
    return reason;
  }

  override async disconnect(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    await super.disconnect();
  }

  protected override async onWebSocketMessage(data: string | ArrayBuffer, isBinary: boolean): Promise<void> {
    let frame: unknown;
    try {
      frame = isBinary
        ? undefined
        : JSON.parse(typeof data === "string" ? data : new TextDecoder().decode(data));
    } catch {
      frame = undefined;
    }
    if (!isObject(frame) || typeof frame.type !== "string") {
      this.onUnreadable(isBinary ? "a binary frame" : "a frame that is not a JSON object with a type");
      return;
    }
    if (frame.type === "disconnect") {
      const why = typeof frame.reason === "string" ? frame.reason : "no reason given";
      this.#leaving = `Slack asked for a new connection (${why})`;
    }
    const payload = frame.payload;
    const readable = isObject(payload) && isObject(payload.event) && typeof payload.event.type === "string";
    const safe = frame.type === "events_api" && !readable ? { ...frame, payload: UNREADABLE_PAYLOAD } : frame;
    if (safe !== frame) this.onUnreadable("an events_api frame without a readable event");
    try {
      await super.onWebSocketMessage(JSON.stringify(safe), false);
    } catch (error) {
      this.onUnreadable(describeError(error));
    }
  }
}

/**
 * Socket Mode: the hub dials Slack (`apps.connections.open` with the app token, then a
 * WebSocket), so no public URL is needed. An envelope is acknowledged only after admission,
 * so a failure to admit leaves it to Slack's redelivery (deduplicated by the hub).
 */
export class SocketConnection {
  readonly #o: SocketConnectionOptions;
  readonly #client: GuardedSocketModeClient;

  constructor(options: SocketConnectionOptions) {
    this.#o = options;
    this.#client = new GuardedSocketModeClient({
      appToken: options.appToken,
      logger: options.boltLogger,
      autoReconnectEnabled: true,
      // The client's own Web API calls (apps.connections.open) go to the same API root; no 100× retry loop.
      clientOptions: { slackApiUrl: options.apiUrl, retryConfig: { retries: 2 } },
    });
    this.#client.onUnreadable = (reason) =>
      options.logger.warn({ reason }, "slack socket frame unreadable; dropped");
    this.#client.onReconnectFailed = (reason, retryInMs) => {
      options.logger.warn({ reason, retryInMs }, "slack socket could not reconnect; trying again");
      options.onState("reconnecting", reason);
    };
    this.#client.on("connecting", () => options.onState("connecting"));
    this.#client.on("connected", () => options.onState("connected"));
    this.#client.on("reconnecting", () => options.onState("reconnecting", this.#client.takeLeavingReason()));
    this.#client.on("slack_event", (args: SlackEventArgs) => void this.#event(args));
  }

  async #event(args: SlackEventArgs): Promise<void> {
    if (args.type !== "events_api" || typeof args.body !== "object" || args.body === null) {
      await args.ack().catch(() => {});
      return;
    }
    const result = await this.#o
      .process({
        body: args.body as Record<string, unknown>,
        retryNum: args.retry_num,
        retryReason: args.retry_reason,
      })
      .catch((error: unknown): InboundResult => ({ kind: "retry", reason: describeError(error) }));
    if (result.kind === "retry") {
      this.#o.logger.error(
        { reason: result.reason, envelopeId: args.envelope_id },
        "slack socket event not admitted; leaving it unacknowledged so Slack redelivers it",
      );
      return;
    }
    await args
      .ack()
      .catch((error: unknown) =>
        this.#o.logger.warn({ err: error, envelopeId: args.envelope_id }, "slack socket ack failed"),
      );
  }

  /** Connects; a failure is thrown as is (the adapter says whether it is a refusal or retried). */
  async start(): Promise<void> {
    await this.#client.start();
  }

  async stop(): Promise<void> {
    await this.#client.disconnect();
  }
}

interface SlackEventArgs {
  ack: (response?: Record<string, unknown>) => Promise<void>;
  envelope_id: string;
  type: string;
  body: unknown;
  retry_num?: number;
  retry_reason?: string;
}
