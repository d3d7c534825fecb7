import { randomUUID } from "node:crypto";
import {
  type AdapterFields,
  type ChannelAccess,
  ChannelAccessSchema,
  finalizeInboundContext,
  type HubConfig,
  type HubLogger,
  type MsgContext,
  type RunRequest,
} from "@hub/core";
import type { Redis } from "ioredis";
import { type ParsedCommand, parseCommand } from "./commands.js";
import { type AccessDecision, dispatchDirect, dispatchGroupThread } from "./policy.js";

/** What happened to one inbound message. */
export type DispatchResult =
  | { status: "accepted"; runId: string; sessionKey: string }
  | { status: "command"; command: string; runId: string; sessionKey: string }
  | { status: "context"; runId: string; sessionKey: string }
  | { status: "duplicate"; dedupeKey: string }
  | { status: "dropped"; reason: string; sessionKey: string };

/** Options of the inbound dispatcher. */
export interface InboundDispatcherOptions {
  redis: Redis;
  prefix: string;
  config: Pick<HubConfig, "agent" | "channels">;
  /** Durably queues accepted work in the session's lane. Throws if it could not. */
  accept: (request: RunRequest) => Promise<void>;
  /**
   * Handles a session command (`/stop`, `/new`, `/status`, `/queue`) from an
   * allowed sender, before the agent and outside the session's queue, so it
   * is never stuck behind a running turn.
   */
  commands?: (command: ParsedCommand, request: RunRequest) => Promise<void>;
  logger: HubLogger;
  /** How long a message id is remembered for dedupe (at least 20 minutes). */
  dedupeTtlSeconds?: number;
}

// The web chat's sender is the authenticated gateway client: open by default.
const WEBCHAT_DEFAULT = ChannelAccessSchema.parse({ dmPolicy: "open", allowFrom: ["*"] });

/**
 * Admission of inbound messages: finalize -> dedupe -> access policy ->
 * group/thread or direct dispatch -> durable acceptance into the session lane.
 */
export class InboundDispatcher {
  readonly #ttl: number;
  constructor(private readonly o: InboundDispatcherOptions) {
    this.#ttl = Math.max(o.dedupeTtlSeconds ?? 1800, 1200);
  }

  #access(channel: string): ChannelAccess | undefined {
    const configured = (this.o.config.channels as Record<string, ChannelAccess | undefined>)[channel];
    return configured ?? (channel === "webchat" ? WEBCHAT_DEFAULT : undefined);
  }

  /**
   * Admits one inbound message. A redelivery of an accepted message is a
   * `duplicate`; a failure to accept releases the dedupe mark and throws, so
   * the platform's redelivery is processed rather than silently dropped.
   */
  async dispatchInboundMessage(
    fields: AdapterFields,
    options: { runId?: string } = {},
  ): Promise<DispatchResult> {
    const ctx = finalizeInboundContext(fields, this.o.config);
    const log = this.o.logger.child({
      sessionKey: ctx.sessionKey,
      channel: ctx.channel,
      dedupeKey: ctx.dedupeKey,
    });
    const dedupe = `${this.o.prefix}:dedupe:${ctx.dedupeKey}`;
    const fresh = await this.o.redis.set(dedupe, "pending", "EX", this.#ttl, "NX");
    if (fresh === null) {
      log.info("duplicate inbound message ignored");
      return { status: "duplicate", dedupeKey: ctx.dedupeKey };
    }
    try {
      const decision = this.#decide(ctx);
      if (decision.kind === "drop") {
        // A decided drop stays marked: a redelivery must not be decided again.
        log.info({ reason: decision.reason }, "inbound message dropped by access policy");
        return { status: "dropped", reason: decision.reason, sessionKey: ctx.sessionKey };
      }
      const runId = options.runId ?? randomUUID();
      const command = decision.kind === "run" && this.o.commands ? parseCommand(ctx.body) : undefined;
      if (command && this.o.commands) {
        await this.o.commands(command, { runId, ctx });
        await this.o.redis.set(dedupe, "accepted", "EX", this.#ttl);
        log.info({ runId, command: command.name }, "session command handled");
        return { status: "command", command: command.name, runId, sessionKey: ctx.sessionKey };
      }
      await this.o.accept({ runId, ctx, ...(decision.kind === "context" ? { contextOnly: true } : {}) });
      await this.o.redis.set(dedupe, "accepted", "EX", this.#ttl);
      log.info({ runId, decision: decision.kind }, "inbound message accepted");
      return { status: decision.kind === "run" ? "accepted" : "context", runId, sessionKey: ctx.sessionKey };
    } catch (error) {
      await this.o.redis.del(dedupe).catch(() => {});
      throw error;
    }
  }

  #decide(ctx: MsgContext): AccessDecision {
    const access = this.#access(ctx.channel);
    if (!access?.enabled) return { kind: "drop", reason: `channel ${ctx.channel} is not configured` };
    return dispatchGroupThread(ctx, access) ?? dispatchDirect(ctx, access);
  }
}
