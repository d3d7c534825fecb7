import { describeError, type HubLogger, type InboundResult } from "@hub/core";
import type { Logger } from "@slack/bolt";
import { SocketModeClient } from "@slack/socket-mode";
import type { SlackEnvelope } from "./events-http.js";

/** What the Socket Mode connection needs. */
export interface SocketConnectionOptions {
  appToken: string;
  apiUrl: string;
  logger: HubLogger;
  boltLogger: Logger;
  /** Processes one event; `retry` leaves it unacknowledged, so Slack redelivers it. */
  process(envelope: SlackEnvelope): Promise<InboundResult>;
  onState(state: "connecting" | "connected" | "reconnecting" | "failed", reason?: string): void;
}

/**
 * Socket Mode: the hub dials Slack (`apps.connections.open` with the app token, then a
 * WebSocket), so no public URL is needed. An envelope is acknowledged only after admission,
 * so a failure to admit leaves it to Slack's redelivery (deduplicated by the hub).
 */
export class SocketConnection {
  readonly #o: SocketConnectionOptions;
  readonly #client: SocketModeClient;

  constructor(options: SocketConnectionOptions) {
    this.#o = options;
    this.#client = new SocketModeClient({
      appToken: options.appToken,
      logger: options.boltLogger,
      autoReconnectEnabled: true,
      // The client's own Web API calls (apps.connections.open) go to the same API root; no 100× retry loop.
      clientOptions: { slackApiUrl: options.apiUrl, retryConfig: { retries: 2 } },
    });
    this.#client.on("connecting", () => options.onState("connecting"));
    this.#client.on("connected", () => options.onState("connected"));
    this.#client.on("reconnecting", () => options.onState("reconnecting"));
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

  async start(): Promise<void> {
    try {
      await this.#client.start();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.#o.onState("failed", reason);
      throw error;
    }
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
