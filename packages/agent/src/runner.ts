import {
  type ChannelCapabilities,
  type ChatEvent,
  failpoint,
  type HubLogger,
  type MsgContext,
  type ReplySink,
  type RunRequest,
  WriteFencedError,
} from "@hub/core";
import { BlockStreamer } from "@hub/reply";
import {
  type ApprovalStore,
  type RunRecords,
  recoveryDecision,
  type SessionActivity,
  type SessionStore,
  type SessionWriters,
  type TerminalStatus,
  type TranscriptEntry,
  WriterSupersededError,
} from "@hub/sessions";
import { loadWorkspaceBootstrap } from "./context/bootstrap.js";
import { compactionMessage, estimateTokens, planCompaction, summarize } from "./context/compaction.js";
import { buildSystemPrompt } from "./context/prompt.js";
import { pruneToolResults } from "./context/prune.js";
import { historyUserContent, withQuotedReply } from "./context/untrusted.js";
import type { ChatMessage, ModelProvider } from "./model.js";
import { ModelError } from "./model.js";
import { type ApprovalMode, ToolCallChain } from "./tool-policy.js";
import type { AgentTool } from "./tools.js";
import { runAgentTurn } from "./turn.js";

/** Publishes chat events to clients (the gateway's event bus). */
export interface ChatEventPublisher {
  publish(event: ChatEvent): Promise<void>;
}

/** Why a run was stopped from outside: the user, a newer claim on its session, or its timeout. */
export class RunStop extends Error {
  constructor(readonly status: "aborted" | "superseded" | "timed_out") {
    super(`run ${status.replace("_", " ")}`);
    this.name = "RunStop";
  }
}

/** This process lost the session's lane lease: another process has the session and will resume the run. */
export class LeaseLost extends Error {
  constructor() {
    super("the session lane lease was lost");
    this.name = "LeaseLost";
  }
}

/** Everything a runner needs, wired by the hub app. */
export interface AgentRunnerOptions {
  agentId: string;
  sessions: SessionStore;
  runs: RunRecords;
  writers: SessionWriters;
  replies: ReplySink;
  events: ChatEventPublisher;
  /** Resolves `provider/model` to a provider and the provider's model name. */
  resolveModel: (ref: string) => { provider: ModelProvider; model: string };
  modelRef: string;
  /** The tools a run in this chat gets and their approval modes (policy already applied). */
  toolsFor: (ctx: MsgContext) => {
    tools: AgentTool[];
    approvals: Record<string, ApprovalMode>;
    approvalTimeoutMs: number;
  };
  approvals: ApprovalStore;
  systemPrompt?: string | undefined;
  /** The agent's workspace directory (bootstrap files) and caps on them. */
  workspaceDir: string;
  bootstrapLimits: { perFileChars: number; totalChars: number };
  /** The model's context window (tokens); history is compacted before it fills up. */
  contextWindowTokens: number;
  runTimeoutMs: number;
  logger: HubLogger;
  /** Asks whichever process runs `runId` to stop it as superseded. */
  supersede: (runId: string) => Promise<void>;
  /** The session's live state: running run, steering, collected messages, usage. */
  activity: SessionActivity;
  /** Queues a request in its session lane again (steered messages the run ended before taking). */
  requeue: (request: RunRequest) => Promise<void>;
  /** How many transcript messages are sent to the model as history. */
  historyLimit?: number;
  /** The capabilities of a channel (block sizes for streaming). */
  capabilitiesOf?: (channel: string) => ChannelCapabilities | undefined;
  /** True when Redis lost its data at or after `since` (epoch ms): leases and claims vanished, not passed on. */
  dataLost?: (since: number) => Promise<boolean>;
  /** Shows "typing…" at a reply target (the channel adapter's), refreshed while a run is active. */
  typing?: (target: MsgContext["replyTarget"]) => Promise<void>;
  /** How often typing is refreshed (platforms drop it after ~5 s). */
  typingIntervalMs?: number;
}

const DEFAULT_IDENTITY = "You are a helpful assistant reached through a chat hub. Answer concisely.";

const RESUME_NOTE =
  "Note: the hub restarted while you were answering the user's last message, so that answer was interrupted. Answer the last message now, in full.";

/**
 * Turns transcript entries into model messages, from the latest compaction on
 * (its summary stands for everything before it); context-only group messages
 * are marked as such. `indices[i]` is the transcript line of message i (-1 for a summary).
 */
export function historyMessages(
  entries: TranscriptEntry[],
  skipRunId?: string,
): { messages: ChatMessage[]; indices: number[] } {
  const messages: ChatMessage[] = [];
  const indices: number[] = [];
  let start = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e?.type === "compaction") {
      messages.push(compactionMessage(e.summary));
      indices.push(-1);
      start = e.keepFrom;
      break;
    }
  }
  const userContent = historyUserContent(entries);
  for (let i = start; i < entries.length; i++) {
    const e = entries[i]!;
    if (skipRunId && "runId" in e && e.runId === skipRunId) continue;
    let m: ChatMessage | undefined;
    if (e.type === "user") m = { role: "user", content: userContent(e) };
    else if (e.type === "assistant")
      m = { role: "assistant", content: e.text, ...(e.toolCalls ? { toolCalls: e.toolCalls } : {}) };
    else if (e.type === "tool_result") m = { role: "tool", toolCallId: e.toolCallId, content: e.content };
    if (m) {
      messages.push(m);
      indices.push(i);
    }
  }
  return { messages, indices };
}

// Never start the history window on a tool result or an assistant tool call whose results were cut off.
function trimHistory(messages: ChatMessage[], limit: number): ChatMessage[] {
  let start = Math.max(0, messages.length - limit);
  while (start < messages.length && messages[start]?.role !== "user") start++;
  return messages.slice(start);
}

/**
 * Answers a request with a fixed text (session commands) through the same
 * path as a run: run record, ordered reply, outcome before the final event.
 */
export async function answerDirectly(
  o: Pick<AgentRunnerOptions, "runs" | "replies" | "events" | "runTimeoutMs" | "logger">,
  request: RunRequest,
  text: string,
  /** Resolve once the answer is queued, not delivered (admission never waits for delivery). */
  options: { detachSettlement?: boolean } = {},
): Promise<void> {
  const { runId, ctx } = request;
  if ((await o.runs.start(runId, ctx.sessionKey, o.runTimeoutMs)) === 0) return;
  const reply = o.replies.open(runId, ctx.replyTarget);
  await reply.push(text);
  await o.runs.finish(runId, { status: "completed", text });
  const segments = await reply.end();
  const announce = async () => {
    await reply.settled();
    await o.events.publish({ runId, sessionKey: ctx.sessionKey, seq: segments, state: "final", text });
  };
  if (!options.detachSettlement) return announce();
  announce().catch((error) =>
    o.logger.warn({ err: error, runId, sessionKey: ctx.sessionKey }, "could not announce a command's answer"),
  );
}

function userEntryOf(request: RunRequest): Extract<TranscriptEntry, { type: "user" }> {
  const { ctx, runId } = request;
  return {
    type: "user",
    runId,
    messageId: ctx.messageId,
    senderId: ctx.sender.id,
    ...(ctx.sender.name ? { senderName: ctx.sender.name } : {}),
    text: ctx.body,
    at: ctx.timestamp,
  };
}

function toEntry(m: ChatMessage, runId: string): TranscriptEntry {
  const at = Date.now();
  if (m.role === "assistant")
    return {
      type: "assistant",
      runId,
      text: m.content,
      ...(m.toolCalls ? { toolCalls: m.toolCalls } : {}),
      at,
    };
  if (m.role === "tool")
    return { type: "tool_result", runId, toolCallId: m.toolCallId, content: m.content, at };
  throw new Error(`a turn does not produce ${m.role} messages`);
}

/**
 * Executes runs: one at a time per session (the session lane guarantees it),
 * from the user's message to one persisted terminal outcome and a settled
 * reply. A run writes its session only while it holds the writer claim; a
 * newer claim ends it as `superseded`. Order of settlement: transcript and run
 * record first, then the reply is awaited, then clients are told.
 */
export class AgentRunner {
  constructor(private readonly o: AgentRunnerOptions) {}

  /** Runs a request to its terminal outcome. Never throws for a failed run: it records `failed`. */
  async run(request: RunRequest, stopSignal: AbortSignal): Promise<void> {
    const { ctx, runId } = request;
    const runStartedAt = Date.now();
    const log = this.o.logger.child({ runId, sessionKey: ctx.sessionKey, channel: ctx.channel });
    if (request.command === "new") {
      await this.o.sessions.reset(ctx.sessionKey);
      await this.answerDirectly(
        request,
        "Started a new session: earlier messages are no longer part of the conversation.",
      );
      return;
    }
    const session = await this.o.sessions.resolve(ctx.sessionKey);
    const userEntry = userEntryOf(request);
    if (request.contextOnly) {
      await this.o.sessions.append(session.sessionId, [{ ...userEntry, contextOnly: true }]);
      log.debug("recorded group message as context");
      return;
    }
    // Collect mode: one turn answers every message collected while the session was busy.
    const batch = request.collect ? await this.o.activity.takeCollected(ctx.sessionKey, runId) : [request];
    if (batch.length === 0) return;
    // Quoted text is someone else's words: the model sees it marked untrusted.
    const withQuote = (r: RunRequest) => withQuotedReply(r.ctx);
    const userText = batch.map(withQuote).join("\n\n");

    const record = await this.o.runs.get(runId);
    if (record && record.status !== "running" && record.status !== "queued") {
      log.info({ status: record.status }, "run already finished; not running it again");
      return;
    }
    // Admission writes the record as "queued"; one still "running" was interrupted and is resumed.
    const existing = record?.status === "running" ? record : undefined;
    const resuming = existing !== undefined;
    if (existing && recoveryDecision(existing, Date.now(), this.o.runTimeoutMs) === "finalize") {
      // Stale or out of attempts: finalized by its exact runId, with no model call and no message.
      if (
        await this.o.runs.finish(
          runId,
          { status: "interrupted", error: "interrupted by a restart; not resumed" },
          existing.attempt,
        )
      ) {
        await this.o.sessions.append(session.sessionId, [
          { type: "outcome", runId, status: "interrupted", at: Date.now() },
        ]);
      }
      log.warn(
        { attempt: existing.attempt, startedAt: existing.startedAt },
        "interrupted run finalized without resuming",
      );
      // Messages steered into the dead run were never seen: they run as follow-ups.
      await this.o.activity.end(ctx.sessionKey, runId, this.o.requeue);
      return;
    }
    const attempt = await this.o.runs.start(runId, ctx.sessionKey, this.o.runTimeoutMs);
    if (attempt === 0) return;
    log.info({ attempt, resuming }, resuming ? "run resumed after an interruption" : "run started");
    // Collected messages are answered by this run; their own records say so.
    for (const other of batch) if (other.runId !== runId) await this.#absorbed(other, runId);

    await this.o.activity.begin(ctx.sessionKey, runId, this.o.runTimeoutMs + 60_000);
    const { claim, superseded } = await this.o.writers.claim(ctx.sessionKey, session.sessionId, runId);
    if (superseded) {
      log.warn({ supersededRunId: superseded }, "this run supersedes the session's previous writer");
      await this.o.supersede(superseded);
    }
    // Lines carry their claim, announced first: a late append after a newer claim is dropped by every reader.
    const writer = `${runId}#${claim.generation}`;
    await this.o.sessions.append(session.sessionId, [{ type: "writer", runId, writer, at: Date.now() }]);
    const writeChecked = async (entries: TranscriptEntry[]) => {
      await this.o.writers.assertCurrent(claim);
      failpoint("transcript.before-append");
      await this.o.sessions.append(
        session.sessionId,
        entries.map((e) => ({ ...e, writer }) as TranscriptEntry),
      );
    };

    // On a resume, this run's own earlier lines are left out: its user message is re-added below.
    const entries = await this.o.sessions.read(session.sessionId);
    const history = historyMessages(entries, runId);

    // Each attempt gets its own reply, so a resumed answer never interleaves with the interrupted one.
    // Fenced by the writer claim in Redis: once a newer claim exists, not one more segment is queued.
    const reply = this.o.replies.open(attempt === 1 ? runId : `${runId}.${attempt}`, ctx.replyTarget, {
      fence: this.o.writers.fenceOf(claim),
    });
    const caps = this.o.capabilitiesOf?.(ctx.channel);
    const streamer = new BlockStreamer({
      minChars: Math.min(caps?.streamMinChars ?? 1, caps?.textLimit ?? 3000),
      maxChars: Math.min(caps?.textLimit ?? 3000, 3000),
    });
    // Blocks are pushed strictly one after another, so their order is the model's order.
    let pushing: Promise<void> = Promise.resolve();
    let pushError: unknown;
    // Handled at once (never an unhandled rejection); the first failure fails the run below.
    const pushBlocks = (blocks: string[]) => {
      for (const block of blocks) {
        pushing = pushing
          .then(() => {
            if (pushError !== undefined) return;
            failpoint("run.before-push");
            return reply.push(block);
          })
          .catch((error) => {
            pushError ??= error;
          });
      }
    };

    const abort = new AbortController();
    const onStop = () => abort.abort(stopSignal.reason);
    stopSignal.addEventListener("abort", onStop);
    if (stopSignal.aborted) onStop();
    const timeout = setTimeout(() => abort.abort(new RunStop("timed_out")), this.o.runTimeoutMs);
    const stopTyping = this.#startTyping(ctx.replyTarget, log);

    let status: TerminalStatus = "completed";
    let abandoned = false;
    let stopReason = "natural_end";
    let errorText: string | undefined;
    let text = "";
    try {
      if (!resuming) await writeChecked(batch.map(userEntryOf));
      if (abort.signal.aborted) throw abort.signal.reason;
      const { provider, model } = this.o.resolveModel(this.o.modelRef);
      const policy = this.o.toolsFor(ctx);
      const bootstrap = await loadWorkspaceBootstrap(this.o.workspaceDir, this.o.bootstrapLimits);
      if (bootstrap.diagnostics.length)
        log.warn({ diagnostics: bootstrap.diagnostics }, "workspace files were cut for the model");
      const system = buildSystemPrompt({
        identity: this.o.systemPrompt ?? DEFAULT_IDENTITY,
        tools: policy.tools.map((t) => t.spec),
        channel: {
          channel: ctx.channel,
          chatType: ctx.chat.type,
          ...(ctx.chat.title ? { chatTitle: ctx.chat.title } : {}),
          ...(ctx.sender.name ? { senderName: ctx.sender.name } : {}),
          senderId: ctx.sender.id,
        },
        now: new Date(),
        bootstrap,
      });
      let past = history.messages;
      // Compaction: near the context window, older turns become one summary written to the transcript.
      const plan = planCompaction(past, {
        contextWindow: this.o.contextWindowTokens,
        reserveTokens:
          estimateTokens([
            { role: "system", content: system },
            { role: "user", content: userText },
          ]) + 4096,
        keepRecentTokens: Math.floor(this.o.contextWindowTokens * 0.3),
      });
      if (plan) {
        const summary = await summarize(provider, model, plan.older, abort.signal);
        const firstKept = history.indices[past.length - plan.kept.length] ?? -1;
        // A tail that starts at the previous summary keeps what that summary kept.
        const previous = entries.findLast((e) => e.type === "compaction");
        const keepFrom = firstKept >= 0 ? firstKept : previous?.type === "compaction" ? previous.keepFrom : 0;
        await writeChecked([{ type: "compaction", runId, summary, keepFrom, at: Date.now() }]);
        log.info({ summarized: plan.older.length, kept: plan.kept.length }, "history compacted");
        past = [compactionMessage(summary), ...plan.kept];
      }
      const messages: ChatMessage[] = [
        { role: "system", content: system },
        // Old tool results are shortened only in what the model sees; the transcript keeps them whole.
        ...pruneToolResults(trimHistory(past, this.o.historyLimit ?? 200)),
        { role: "user", content: userText },
        ...(resuming ? [{ role: "system" as const, content: RESUME_NOTE }] : []),
      ];
      const canAsk = caps?.interactive !== false;
      const chain = new ToolCallChain({
        allowed: new Set(policy.tools.map((t) => t.spec.name)),
        approvals: policy.approvals,
        ...(canAsk
          ? {
              ask: async (call, args) => {
                const code = await this.o.approvals.open(ctx.sessionKey, policy.approvalTimeoutMs);
                const seconds = Math.round(policy.approvalTimeoutMs / 1000);
                // What the model said before asking goes out first.
                pushBlocks(streamer.flush());
                pushBlocks([
                  `Approve running \`${call.name}\` with \`${JSON.stringify(args)}\`? Reply /approve ${code} or /deny ${code} (within ${seconds} s).`,
                ]);
                await pushing;
                return this.o.approvals.wait(code, policy.approvalTimeoutMs, abort.signal);
              },
            }
          : {}),
      });
      const result = await runAgentTurn({
        runId,
        sessionKey: ctx.sessionKey,
        provider,
        model,
        messages,
        tools: policy.tools,
        chain,
        signal: abort.signal,
        onText: (delta) => pushBlocks(streamer.push(delta)),
        onCommit: (step) => writeChecked(step.map((m) => toEntry(m, runId))),
        steeringPending: () => this.o.activity.hasSteering(runId),
        takeSteering: async () => {
          const steered = await this.o.activity.takeSteering(runId);
          if (steered.length) await writeChecked(steered.map(userEntryOf));
          for (const s of steered) await this.#absorbed(s, runId);
          return steered.map((s) => s.ctx.body);
        },
      });
      await this.o.activity.addUsage(ctx.sessionKey, result.usage);
      pushBlocks(streamer.flush());
      text = result.text;
      if (pushError !== undefined) throw pushError;
      stopReason = {
        stop: "natural_end",
        tool_calls: "natural_end",
        tool_loop: "tool_loop_guard",
        policy_stop: "policy_stop",
        length: "length",
        content_filter: "content_filter",
      }[result.stopReason];
      await pushing;
    } catch (error) {
      const reason = abort.signal.aborted ? abort.signal.reason : error;
      if (reason instanceof LeaseLost) abandoned = true;
      status =
        error instanceof WriterSupersededError ||
        error instanceof WriteFencedError ||
        (reason instanceof RunStop && reason.status === "superseded")
          ? "superseded"
          : reason instanceof RunStop
            ? reason.status
            : abort.signal.aborted
              ? "aborted"
              : "failed";
      errorText = error instanceof Error ? error.message : String(error);
      stopReason =
        status === "superseded"
          ? "superseded"
          : status === "aborted"
            ? "user_abort"
            : status === "timed_out"
              ? "timeout"
              : error instanceof ModelError
                ? "provider_error"
                : "internal_error";
      log[status === "failed" ? "error" : "warn"]({ err: error, status }, "run did not complete");
      streamer.flush();
      await pushing.catch(() => {});
      if (status === "failed" || status === "timed_out") pushBlocks([failureNotice(error, status)]);
      await pushing.catch((e) => log.error({ err: e }, "could not queue the failure notice"));
    } finally {
      // Whatever way the run ended, typing stops before the outcome is announced.
      stopTyping();
      clearTimeout(timeout);
      stopSignal.removeEventListener("abort", onStop);
    }

    // A claim or lease that vanished with Redis's data was not taken over: nobody else will end this run.
    if ((abandoned || status === "superseded") && (await this.o.dataLost?.(runStartedAt))) {
      await this.#endAfterDataLoss(request, session.sessionId, log);
      return;
    }
    if (abandoned) {
      // Another process owns the session now and resumes this run; deciding its outcome here would cut that short.
      log.warn("lost the session lane; the run is left to the process that took it over");
      return;
    }
    // Terminal outcome first (transcript, if we still own it, and the run record), then settle, then tell clients.
    if (status !== "superseded") {
      await writeChecked([
        {
          type: "outcome",
          runId,
          status,
          stopReason,
          ...(errorText ? { error: errorText } : {}),
          at: Date.now(),
        },
      ]).catch((error) =>
        log.warn({ err: error }, "outcome not written to the transcript: the session has a newer writer"),
      );
    }
    const decided = await this.o.runs.finish(
      runId,
      { status, text, stopReason, ...(errorText ? { error: errorText } : {}) },
      attempt,
    );
    await this.o.writers.release(claim);
    // Messages steered in after the last batch boundary were never seen by this run: they run next.
    await this.o.activity.end(ctx.sessionKey, runId, this.o.requeue);
    const segments = await reply.end();
    if (!decided) {
      log.warn({ status }, "run outcome was already decided elsewhere; not announcing");
      return;
    }
    // Delivery retries with backoff can take long; the session is not held hostage by it forever.
    let settleTimer: NodeJS.Timeout | undefined;
    const settlement = await Promise.race([
      reply.settled(),
      new Promise<undefined>((resolve) => {
        settleTimer = setTimeout(() => resolve(undefined), this.o.runTimeoutMs);
      }),
    ]);
    clearTimeout(settleTimer);
    if (!settlement)
      log.warn({ segments }, "reply not settled within the run timeout; announcing the end anyway");
    log.info({ status, segments, ...(settlement ?? {}) }, "run finished");
    await this.o.events.publish({
      runId,
      sessionKey: ctx.sessionKey,
      seq: segments,
      state:
        status === "completed"
          ? "final"
          : status === "aborted" || status === "superseded"
            ? "aborted"
            : "error",
      text: status === "completed" ? text : (errorText ?? status),
    });
  }

  // Redis lost its data mid-run: record the outcome again, close the transcript's turn and tell the user, unfenced
  // (the claim the fence checks is gone with the data).
  async #endAfterDataLoss(request: RunRequest, sessionId: string, log: HubLogger): Promise<void> {
    const { runId, ctx } = request;
    const error = "the hub's Redis lost its data while this message was being answered";
    log.error("run ended: Redis lost its data while it was in flight");
    await this.o.runs.recordAfterDataLoss(runId, ctx.sessionKey, { status: "failed", error });
    await this.o.sessions.append(sessionId, [
      { type: "outcome", runId, status: "failed", stopReason: "internal_error", error, at: Date.now() },
    ]);
    const notice = this.o.replies.open(`${runId}.lost`, ctx.replyTarget);
    await notice.push(
      "Sorry, I lost track of your message because of a problem on my side. Please send it again.",
    );
    await notice.end();
    await this.o.activity.end(ctx.sessionKey, runId, this.o.requeue);
    await this.o.events.publish({ runId, sessionKey: ctx.sessionKey, seq: 0, state: "error", text: error });
  }

  /** Answers a request with a fixed text (commands), through the same reply and outcome path as a run. */
  answerDirectly(request: RunRequest, text: string): Promise<void> {
    return answerDirectly(this.o, request, text);
  }

  // A steered message is answered by the run it joined; its own run record says so.
  async #absorbed(request: RunRequest, intoRunId: string): Promise<void> {
    const text = `(answered in run ${intoRunId})`;
    if ((await this.o.runs.start(request.runId, request.ctx.sessionKey, this.o.runTimeoutMs)) === 0) return;
    await this.o.runs.finish(request.runId, { status: "completed", text });
    await this.o.events.publish({
      runId: request.runId,
      sessionKey: request.ctx.sessionKey,
      seq: 0,
      state: "final",
      text: "",
    });
  }

  #startTyping(target: MsgContext["replyTarget"], log: HubLogger): () => void {
    const typing = this.o.typing;
    if (!typing) return () => {};
    const send = () =>
      void typing(target).catch((error) => log.debug({ err: error }, "typing indicator failed"));
    send();
    const timer = setInterval(send, this.o.typingIntervalMs ?? 4500);
    return () => clearInterval(timer);
  }
}

function failureNotice(error: unknown, status: TerminalStatus): string {
  if (status === "timed_out") return "Sorry, I could not answer: the run took too long and was stopped.";
  if (error instanceof ModelError) {
    const why: Record<string, string> = {
      auth: "the model provider refused our credentials (check the API key in hub.json5)",
      rate_limit: "the model provider is rate limiting us; try again in a minute",
      overloaded: "the model provider is overloaded; try again shortly",
      context_overflow: "the conversation is too long for the model; send /new to start over",
      network: "the model provider could not be reached",
    };
    return `Sorry, I could not answer: ${why[error.kind] ?? "the model call failed"}.`;
  }
  return "Sorry, I could not answer because of an internal error. The operator can find details in the hub's log.";
}
