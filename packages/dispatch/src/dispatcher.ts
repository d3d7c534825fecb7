import {
  type AdapterFields,
  type ChannelAccess,
  ChannelAccessSchema,
  channelAccess,
  characterCount,
  failpoint,
  finalizeInboundContext,
  type HubConfig,
  type HubLogger,
  InboundRejectedError,
  MAX_INBOUND_TEXT,
  type MsgContext,
  type RunRequest,
  runIdForMessage,
} from "@hub/core";
import type { Redis } from "ioredis";
import type { AdmitToSession } from "./admission-port.js";
import { type ParsedCommand, parseCommand } from "./commands.js";
import { PairingStore, pairingNotice } from "./pairing.js";
import { type AccessDecision, commandAuthorized, dispatchDirect, dispatchGroupThread } from "./policy.js";
import { RateLimiter, type TokenBucket } from "./rate-limit.js";

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
  /** Admits a request into its session in one atomic step (dedupe mark, run record, lane). Throws if it could not. */
  admit: AdmitToSession;
  /**
   * Handles a session command (`/stop`, `/status`, `/queue`, `/approve`) from an
   * allowed sender, before the agent and outside the session's queue, so it
   * is never stuck behind a running turn. It must not wait for delivery, and
   * must be idempotent by runId (a redelivery after a crash runs it again).
   * `/new` is not handled here: it is admitted into the session's lane.
   */
  commands?: (command: ParsedCommand, request: RunRequest) => Promise<void>;
  logger: HubLogger;
  /** Sends a short hub message (pairing code, refusal, flood notice) to where a message came from. */
  notify?: (ctx: MsgContext, text: string) => Promise<void>;
  /** How long a message id is remembered for dedupe (at least 20 minutes). */
  dedupeTtlSeconds?: number;
}

// The web chat's sender is the authenticated gateway client: open by default.
const WEBCHAT_DEFAULT = ChannelAccessSchema.parse({ dmPolicy: "open", allowFrom: ["*"] });

/**
 * Admission of inbound messages, in this order: finalize -> known message?
 * (a redelivery costs nothing, not even a rate-limit token) -> access policy
 * (group/thread, then direct) -> rate limits -> one atomic admission step
 * (dedupe mark, run record, lane) -> only then is the platform or client
 * acknowledged (the caller does that when this resolves).
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

  // Floods are bounded per sender and per chat, across processes. The gateway's owner is not a flood risk;
  // platform senders and the gateway's other clients (each a sender of its own) are.
  #buckets(ctx: MsgContext): TokenBucket[] {
    if (ctx.floodExempt) return [];
    const limits = this.o.config.limits;
    const sender = this.#limiter.bucket(
      `sender:${senderOf(ctx)}`,
      limits.senderBurst,
      limits.senderPerMinute,
    );
    // Every message of a direct chat is its one sender's, and spends the sender's token first: a chat
    // bucket no smaller and refilling no slower than the sender's then always holds at least as many
    // tokens, so it can never refuse one. It is not taken (two Redis commands per message saved).
    if (
      ctx.chat.type === "direct" &&
      limits.chatBurst >= limits.senderBurst &&
      limits.chatPerMinute >= limits.senderPerMinute
    )
      return [sender];
    const chat = `chat:${ctx.channel}:${ctx.accountId}:${ctx.chat.id}`;
    return [sender, this.#limiter.bucket(chat, limits.chatBurst, limits.chatPerMinute)];
  }

  async #withinLimits(ctx: MsgContext, log: HubLogger): Promise<boolean> {
    if (await this.#limiter.take(this.#buckets(ctx))) return true;
    await this.#rateLimited(ctx, log);
    return false;
  }

  // One notice per minute, then silence.
  async #rateLimited(ctx: MsgContext, log: HubLogger): Promise<void> {
    log.warn({ senderId: ctx.sender.id }, "inbound message dropped: rate limit");
    if (await this.#limiter.once(senderOf(ctx), 60_000)) {
      await this.#notify(
        ctx,
        "You are sending messages faster than I can answer; I am skipping some. Please slow down.",
        log,
      );
    }
  }

  #access(channel: string, accountId: string): ChannelAccess | undefined {
    const configured = channelAccess(this.o.config.channels, channel, accountId);
    return configured ?? (channel === "webchat" ? WEBCHAT_DEFAULT : undefined);
  }

  #dedupeKey(ctx: MsgContext): string {
    return `${this.o.prefix}:dedupe:${ctx.dedupeKey}`;
  }

  // A message decided or admitted before (its mark, or its run record) is a duplicate: read-only, no token spent.
  async #known(ctx: MsgContext, runId: string): Promise<boolean> {
    const [mark, run] = await this.o.redis
      .pipeline()
      .exists(this.#dedupeKey(ctx))
      .exists(`${this.o.prefix}:run:${runId}`)
      .exec()
      .then((r) => (r ?? []).map(([error, value]) => (error ? 0 : Number(value))));
    return mark === 1 || run === 1;
  }

  async #markDecided(ctx: MsgContext): Promise<void> {
    await this.o.redis.set(this.#dedupeKey(ctx), "decided", "EX", this.#ttl);
  }

  /**
   * Admits one inbound message. A redelivery of a known message is a
   * `duplicate`; a failure before the atomic admission step leaves nothing
   * behind and throws, so the platform's redelivery is processed.
   */
  async dispatchInboundMessage(
    fields: AdapterFields,
    options: { runId?: string } = {},
  ): Promise<DispatchResult> {
    let ctx: MsgContext;
    try {
      ctx = finalizeInboundContext(fields, this.o.config);
    } catch (error) {
      if (error instanceof InboundRejectedError && error.code === "inbound_too_large")
        return this.#tooLong(fields, error, options.runId);
      if (error instanceof InboundRejectedError && error.code === "inbound_empty")
        return this.#empty(fields, error);
      throw error;
    }
    const parsed = this.o.commands ? parseCommand(ctx.body) : undefined;
    // A command stays in the thread's own session: `/new` or `/queue` there is about the thread.
    const ownSession = ctx.sessionKey;
    if (!parsed) ctx = await this.#inRootSession(ctx);
    const log = this.#logFor(ctx);
    const runId = options.runId ?? runIdForMessage(ctx.dedupeKey);
    const access = this.#access(ctx.channel, ctx.accountId);
    const paired = await this.#paired(ctx, access, parsed !== undefined);
    const decision = this.#decide(ctx, access, paired);
    const command = decision.kind === "run" ? parsed : undefined;
    // The common case (a message to run or keep as context, or an authorized /new) is one atomic step
    // that also dedupes and takes the rate-limit tokens; everything else is decided here first.
    const admitsAtOnce =
      access !== undefined &&
      (decision.kind === "run" || decision.kind === "context") &&
      (!command || (command.name === "new" && commandAuthorized(ctx, access, paired)));
    if (!admitsAtOnce) return this.#decideFirst({ ctx, runId, access, paired, decision, command }, log);
    failpoint("admission.before-admit");
    const request: RunRequest = {
      runId,
      ctx,
      ...(decision.kind === "context" ? { contextOnly: true } : {}),
      ...(command ? { command: "new" as const } : {}),
      // Moved into its chat's session, or answered in a thread of its own, it is never steered into (or
      // collected with, or interrupting) a run that may answer in another thread.
      ...((ctx.sessionKey !== ownSession || ctx.ownThread) && decision.kind === "run"
        ? { ownTurn: true }
        : {}),
    };
    const dedupe = { key: this.#dedupeKey(ctx), ttlSeconds: this.#ttl };
    const outcome = await this.o.admit(request, dedupe, this.#buckets(ctx));
    failpoint("admission.after-admit");
    if (outcome === "duplicate") {
      log.info({ runId }, "duplicate inbound message ignored");
      return { status: "duplicate", dedupeKey: ctx.dedupeKey };
    }
    if (outcome === "rate_limited") {
      await this.#rateLimited(ctx, log);
      return { status: "rate_limited", sessionKey: ctx.sessionKey };
    }
    // A thread message run in its chat's session: its record names the thread, for a /stop sent there.
    if (request.ownTurn && ctx.sessionKey !== ownSession && ctx.threadId !== undefined)
      await this.o.redis.hset(`${this.o.prefix}:run:${runId}`, "thread", ctx.threadId);
    // Debug: a message's one info line is its run's "run finished".
    log.debug({ runId, decision: decision.kind, outcome }, "inbound message accepted");
    if (command) return { status: "command", command: command.name, runId, sessionKey: ctx.sessionKey };
    return { status: decision.kind === "run" ? "accepted" : "context", runId, sessionKey: ctx.sessionKey };
  }

  /**
   * A thread that starts at a message the hub ran in the chat's own session (Slack's thread on a top-level
   * mention) continues that session: the question and answer it follows up on are there, and its messages
   * are answered after that run, in the session's queue mode, instead of racing it from a session of their
   * own into the same thread. One HGET, for thread messages only.
   */
  async #inRootSession(ctx: MsgContext): Promise<MsgContext> {
    const cut = ctx.sessionKey.lastIndexOf(":thread:");
    if (ctx.threadId === undefined || cut < 0) return ctx;
    const chatSession = ctx.sessionKey.slice(0, cut);
    const root = runIdForMessage(`${ctx.channel}:${ctx.accountId}:${ctx.chat.id}:${ctx.threadId}`);
    const rootSession = await this.o.redis.hget(`${this.o.prefix}:run:${root}`, "sessionKey");
    return rootSession === chatSession ? { ...ctx, sessionKey: chatSession } : ctx;
  }

  // Every line about one inbound message carries its session, channel and dedupe key.
  #logFor(ctx: MsgContext): HubLogger {
    return this.o.logger.child({
      sessionKey: ctx.sessionKey,
      channel: ctx.channel,
      dedupeKey: ctx.dedupeKey,
    });
  }

  // A message that shows nothing (invisible characters only) is the sender's doing, and anyone's before
  // the access check: ignored at debug level, like the whitespace-only and content-less messages the
  // adapters skip, not a warning the operator can do nothing about. A placeholder body finds its session.
  #empty(fields: AdapterFields, rejection: InboundRejectedError): DispatchResult {
    let ctx: MsgContext;
    try {
      ctx = finalizeInboundContext({ ...fields, body: "(empty)" }, this.o.config);
    } catch {
      throw rejection; // not only empty: the fields themselves are bad
    }
    this.#logFor(ctx).debug({ messageId: fields.messageId }, "inbound message ignored: it is empty");
    return { status: "dropped", reason: "the message is empty", sessionKey: ctx.sessionKey };
  }

  // A text over the limit from someone the hub would answer: they are told (once per message, within the
  // flood limits) instead of hearing nothing. From anyone else it stays the rejection it was.
  async #tooLong(
    fields: AdapterFields,
    rejection: InboundRejectedError,
    id?: string,
  ): Promise<DispatchResult> {
    // Its start stands in for it (who may be answered does not depend on the rest, a mention included).
    const start = fields.body.slice(0, 1000).replace(/[\uD800-\uDBFF]$/, "");
    const ctx = finalizeInboundContext({ ...fields, body: start }, this.o.config);
    const access = this.#access(ctx.channel, ctx.accountId);
    const decision = this.#decide(ctx, access, await this.#paired(ctx, access, false));
    if (decision.kind !== "run" || !access) throw rejection;
    const log = this.#logFor(ctx);
    const runId = id ?? runIdForMessage(ctx.dedupeKey);
    if (await this.#known(ctx, runId)) return { status: "duplicate", dedupeKey: ctx.dedupeKey };
    if (!(await this.#withinLimits(ctx, log))) return { status: "rate_limited", sessionKey: ctx.sessionKey };
    await this.#markDecided(ctx);
    const characters = characterCount(fields.body);
    log.info({ length: characters }, "inbound message too long; the sender is told");
    await this.#notify(
      ctx,
      `Your message is ${characters.toLocaleString("en-US")} characters long; I can read at most ${MAX_INBOUND_TEXT.toLocaleString("en-US")}. Please send it in parts, or as a file.`,
      log,
    );
    return { status: "dropped", reason: "text too long", sessionKey: ctx.sessionKey };
  }

  // Whether a direct sender is paired, asked of Redis only when the answer can change the decision:
  // the policy admits listed or paired senders only, or the message is a command.
  async #paired(ctx: MsgContext, access: ChannelAccess | undefined, isCommand: boolean): Promise<boolean> {
    if (ctx.chat.type !== "direct" || !access) return false;
    const needed = isCommand || access.dmPolicy === "allowlist" || access.dmPolicy === "pairing";
    if (!needed || access.allowFrom.includes(ctx.sender.id)) return false;
    return this.pairing.isApproved(ctx.channel, ctx.accountId, ctx.sender.id);
  }

  // Pairing, drops, refused and answered commands: a message decided or admitted before is a duplicate
  // (read-only, no token spent), and a drop is marked so a redelivery is not decided again.
  async #decideFirst(
    d: {
      ctx: MsgContext;
      runId: string;
      access: ChannelAccess | undefined;
      paired: boolean;
      decision: AccessDecision;
      command: ParsedCommand | undefined;
    },
    log: HubLogger,
  ): Promise<DispatchResult> {
    const { ctx, runId, access, decision, command } = d;
    if (await this.#known(ctx, runId)) {
      log.info({ runId }, "duplicate inbound message ignored");
      return { status: "duplicate", dedupeKey: ctx.dedupeKey };
    }
    if (decision.kind === "pair" && access) return this.#pair(ctx, access, log);
    if (decision.kind === "drop" || decision.kind === "pair" || !access) {
      const reason = decision.kind === "drop" ? decision.reason : "channel is not configured";
      log.info({ reason }, "inbound message dropped by access policy");
      await this.#markDecided(ctx);
      return { status: "dropped", reason, sessionKey: ctx.sessionKey };
    }
    // Access first: a refused message never spends a sender's or a chat's tokens. An authorized /stop is
    // never held back by the flood limit: a sender who sent too much needs it most.
    const authorized = command !== undefined && commandAuthorized(ctx, access, d.paired);
    const stopping = authorized && command?.name === "stop";
    if (!stopping && !(await this.#withinLimits(ctx, log)))
      return { status: "rate_limited", sessionKey: ctx.sessionKey };
    if (command && !authorized) return this.#refuseCommand(command, ctx, log);
    if (!command) throw new Error("unreachable: a message without a command is admitted at once");
    return this.#command(command, { runId, ctx }, log);
  }

  async #pair(ctx: MsgContext, access: ChannelAccess, log: HubLogger): Promise<DispatchResult> {
    const request = await this.pairing.request({
      channel: ctx.channel,
      accountId: ctx.accountId,
      senderId: ctx.sender.id,
      senderName: ctx.sender.name,
      replyTarget: ctx.replyTarget,
    });
    log.info({ senderId: ctx.sender.id, pairing: request.kind }, "unknown sender: pairing");
    const notice = pairingNotice(request, access.unpairedResponse);
    if (notice) await this.#notify(ctx, notice, log);
    await this.#markDecided(ctx);
    return {
      status: "pairing",
      code: "code" in request ? request.code : undefined,
      sessionKey: ctx.sessionKey,
    };
  }

  async #refuseCommand(command: ParsedCommand, ctx: MsgContext, log: HubLogger): Promise<DispatchResult> {
    log.warn({ command: command.name, senderId: ctx.sender.id }, "command refused: sender not authorized");
    await this.#notify(ctx, `Sorry, only the owner and approved people can use /${command.name} here.`, log);
    await this.#markDecided(ctx);
    return {
      status: "dropped",
      reason: `sender ${ctx.sender.id} may not run /${command.name}`,
      sessionKey: ctx.sessionKey,
    };
  }

  // A command answered at admission runs first and is marked after: a crash in between runs it again
  // under the same runId, whose run record makes its answer happen once.
  async #command(command: ParsedCommand, request: RunRequest, log: HubLogger): Promise<DispatchResult> {
    const { ctx, runId } = request;
    await this.o.commands?.(command, request);
    await this.o.redis.set(this.#dedupeKey(ctx), "accepted", "EX", this.#ttl);
    log.info({ runId, command: command.name }, "session command handled");
    return { status: "command", command: command.name, runId, sessionKey: ctx.sessionKey };
  }

  #decide(ctx: MsgContext, access: ChannelAccess | undefined, paired: boolean): AccessDecision {
    if (!access) return { kind: "drop", reason: `channel ${ctx.channel} is not configured` };
    if (!access.enabled)
      return { kind: "drop", reason: `channel ${ctx.channel} is disabled (enabled: false in the config)` };
    return dispatchGroupThread(ctx, access) ?? dispatchDirect(ctx, access, paired);
  }
}

const senderOf = (ctx: MsgContext) => `${ctx.channel}:${ctx.accountId}:${ctx.sender.id}`;
