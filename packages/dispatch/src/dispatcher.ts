import { randomUUID } from "node:crypto";
import {
  type AdapterFields,
  type ChannelAccess,
  ChannelAccessSchema,
  channelAccess,
  finalizeInboundContext,
  type HubConfig,
  type HubLogger,
  InboundRejectedError,
  type MsgContext,
  type RunRequest,
} from "@hub/core";
import type { Redis } from "ioredis";
import { type ParsedCommand, parseCommand } from "./commands.js";
import { PairingStore } from "./pairing.js";
import { type AccessDecision, commandAuthorized, dispatchDirect, dispatchGroupThread } from "./policy.js";
import { RateLimiter } from "./rate-limit.js";

/** What happened to one inbound message. */
export type DispatchResult =
  | { status: "accepted"; runId: string; sessionKey: string }
  | { status: "command"; command: string; runId: string; sessionKey: string }
  | { status: "context"; runId: string; sessionKey: string }
  | { status: "duplicate"; dedupeKey: string }
  | { status: "dropped"; reason: string; sessionKey: string }
  | { status: "pairing"; code: string | undefined; sessionKey: string }
  | { status: "rate_limited"; sessionKey: string };

/** Options of the inbound dispatcher. */
export interface InboundDispatcherOptions {
  redis: Redis;
  prefix: string;
  config: Pick<HubConfig, "agent" | "channels" | "limits">;
  /** Durably queues accepted work in the session's lane. Throws if it could not. */
  accept: (request: RunRequest) => Promise<void>;
  /**
   * Handles a session command (`/stop`, `/new`, `/status`, `/queue`) from an
   * allowed sender, before the agent and outside the session's queue, so it
   * is never stuck behind a running turn.
   */
  commands?: (command: ParsedCommand, request: RunRequest) => Promise<void>;
  logger: HubLogger;
  /** Sends a short hub message (pairing code, refusal, flood notice) to where a message came from. */
  notify?: (ctx: MsgContext, text: string) => Promise<void>;
  /** How long a message id is remembered for dedupe (at least 20 minutes). */
  dedupeTtlSeconds?: number;
}

/** How long a message may sit between "seen" and "accepted" before a redelivery is processed again. */
const PENDING_TTL_SECONDS = 60;

// The web chat's sender is the authenticated gateway client: open by default.
const WEBCHAT_DEFAULT = ChannelAccessSchema.parse({ dmPolicy: "open", allowFrom: ["*"] });

/**
 * Admission of inbound messages: finalize -> dedupe -> access policy ->
 * group/thread or direct dispatch -> durable acceptance into the session lane.
 */
export class InboundDispatcher {
  readonly #ttl: number;
  readonly pairing: PairingStore;
  readonly #limiter: RateLimiter;
  constructor(private readonly o: InboundDispatcherOptions) {
    this.#ttl = Math.max(o.dedupeTtlSeconds ?? 1800, 1200);
    this.pairing = new PairingStore(o.redis, o.prefix);
    this.#limiter = new RateLimiter(o.redis, o.prefix);
  }

  async #notify(ctx: MsgContext, text: string, log: HubLogger): Promise<void> {
    await this.o
      .notify?.(ctx, text)
      .catch((error) => log.warn({ err: error }, "could not send a hub notice"));
  }

  // Floods are bounded per sender and per chat, across processes; one notice per minute, then silence.
  async #withinLimits(ctx: MsgContext, log: HubLogger): Promise<boolean> {
    // The owner (the authenticated gateway client) is not a flood risk; platform senders are.
    if (ctx.commandAuthorized) return true;
    const limits = this.o.config.limits;
    const sender = `${ctx.channel}:${ctx.accountId}:${ctx.sender.id}`;
    const chat = `${ctx.channel}:${ctx.accountId}:${ctx.chat.id}`;
    const ok =
      (await this.#limiter.take(`sender:${sender}`, limits.senderBurst, limits.senderPerMinute)) &&
      (await this.#limiter.take(`chat:${chat}`, limits.chatBurst, limits.chatPerMinute));
    if (ok) return true;
    log.warn({ senderId: ctx.sender.id }, "inbound message dropped: rate limit");
    if (await this.#limiter.once(sender, 60_000)) {
      await this.#notify(
        ctx,
        "You are sending messages faster than I can answer; I am skipping some. Please slow down.",
        log,
      );
    }
    return false;
  }

  #access(channel: string, accountId: string): ChannelAccess | undefined {
    const configured = channelAccess(this.o.config.channels, channel, accountId);
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
    const tooBig = ctx.media.find((m) => (m.size ?? 0) > this.o.config.limits.maxAttachmentBytes);
    if (tooBig) {
      log.warn({ size: tooBig.size }, "inbound message rejected: attachment too large");
      throw new InboundRejectedError(
        "inbound_too_large",
        `Inbound message rejected: an attachment is ${tooBig.size} bytes; the limit is ${this.o.config.limits.maxAttachmentBytes} (limits.maxAttachmentBytes).`,
      );
    }
    if (!(await this.#withinLimits(ctx, log))) return { status: "rate_limited", sessionKey: ctx.sessionKey };
    const dedupe = `${this.o.prefix}:dedupe:${ctx.dedupeKey}`;
    // "pending" lives only briefly: if this process dies before accepting, the platform's redelivery is processed.
    const fresh = await this.o.redis.set(dedupe, "pending", "EX", PENDING_TTL_SECONDS, "NX");
    if (fresh === null) {
      if ((await this.o.redis.get(dedupe)) === "pending") {
        // Being admitted right now elsewhere: make the platform retry rather than call it a duplicate.
        throw new Error(`message ${ctx.dedupeKey} is being admitted by another worker; retry shortly`);
      }
      log.info("duplicate inbound message ignored");
      return { status: "duplicate", dedupeKey: ctx.dedupeKey };
    }
    let accepted = false;
    try {
      const access = this.#access(ctx.channel, ctx.accountId);
      const paired =
        ctx.chat.type === "direct" &&
        (await this.pairing.isApproved(ctx.channel, ctx.accountId, ctx.sender.id));
      const decision = this.#decide(ctx, access, paired);
      if (decision.kind === "pair" && access) {
        const request = await this.pairing.request({
          channel: ctx.channel,
          accountId: ctx.accountId,
          senderId: ctx.sender.id,
          senderName: ctx.sender.name,
          replyTarget: ctx.replyTarget,
        });
        log.info({ senderId: ctx.sender.id, pairing: request.kind }, "unknown sender: pairing");
        if (request.kind === "new" && access.unpairedResponse === "code") {
          await this.#notify(
            ctx,
            `Hi! I only answer people my owner has approved. Your pairing code is ${request.code} (valid for 1 hour); send it to the owner to be let in.`,
            log,
          );
        }
        await this.o.redis.set(dedupe, "decided", "EX", this.#ttl);
        return {
          status: "pairing",
          code: request.kind === "full" ? undefined : request.code,
          sessionKey: ctx.sessionKey,
        };
      }
      if (decision.kind === "drop") {
        // A decided drop stays marked: a redelivery must not be decided again.
        log.info({ reason: decision.reason }, "inbound message dropped by access policy");
        await this.o.redis.set(dedupe, "decided", "EX", this.#ttl);
        return { status: "dropped", reason: decision.reason, sessionKey: ctx.sessionKey };
      }
      const runId = options.runId ?? randomUUID();
      const command = decision.kind === "run" && this.o.commands ? parseCommand(ctx.body) : undefined;
      if (command && this.o.commands) {
        if (!access || !commandAuthorized(ctx, access, paired)) {
          log.warn(
            { command: command.name, senderId: ctx.sender.id },
            "command refused: sender not authorized",
          );
          await this.#notify(
            ctx,
            `Sorry, only the owner and approved people can use /${command.name} here.`,
            log,
          );
          await this.o.redis.set(dedupe, "decided", "EX", this.#ttl);
          return {
            status: "dropped",
            reason: `sender ${ctx.sender.id} may not run /${command.name}`,
            sessionKey: ctx.sessionKey,
          };
        }
        await this.o.commands(command, { runId, ctx });
        await this.o.redis.set(dedupe, "accepted", "EX", this.#ttl);
        log.info({ runId, command: command.name }, "session command handled");
        return { status: "command", command: command.name, runId, sessionKey: ctx.sessionKey };
      }
      await this.o.accept({ runId, ctx, ...(decision.kind === "context" ? { contextOnly: true } : {}) });
      accepted = true;
      await this.o.redis.set(dedupe, "accepted", "EX", this.#ttl);
      log.info({ runId, decision: decision.kind }, "inbound message accepted");
      return { status: decision.kind === "run" ? "accepted" : "context", runId, sessionKey: ctx.sessionKey };
    } catch (error) {
      // Once accepted, the mark stays: releasing it would let a redelivery become a second run.
      if (!accepted) await this.o.redis.del(dedupe).catch(() => {});
      throw error;
    }
  }

  #decide(ctx: MsgContext, access: ChannelAccess | undefined, paired: boolean): AccessDecision {
    if (!access?.enabled) return { kind: "drop", reason: `channel ${ctx.channel} is not configured` };
    return dispatchGroupThread(ctx, access) ?? dispatchDirect(ctx, access, paired);
  }
}
