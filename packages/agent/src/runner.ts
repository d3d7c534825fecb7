import {
  type ChannelCapabilities,
  describeError,
  failpoint,
  type HubLogger,
  type MsgContext,
  type Outbox,
  type OutboxFile,
  type ReplySink,
  type ReplyStream,
  type RunRequest,
  recordedSender,
  typingDelayOf,
  WriteFencedError,
} from "@hub/core";
import { BlockStreamer } from "@hub/reply";
import {
  type ApprovalStore,
  type ClaimSeen,
  type HeldSession,
  HeldSessions,
  type LaneHandOut,
  type RunRecords,
  type RunSteps,
  recoveryDecision,
  runActivityTtlMs,
  type SessionActivity,
  type SessionStore,
  type SessionWriters,
  type StagedAnswer,
  type TranscriptEntry,
  type WriterClaim,
  WriterSupersededError,
  withRetries,
} from "@hub/sessions";
import type { Redis } from "ioredis";
import { answerDirectly } from "./answer-directly.js";
import { approvalPrompt } from "./approval-prompt.js";
import { OrderedBlockPusher } from "./block-pusher.js";
import { assembleContext, type ContextInput, type ContextSettings } from "./context/assemble.js";
import type { ChatEventPublisher } from "./events.js";
import {
  endWritten,
  type History,
  historyMessages,
  historyOfHeld,
  toEntry,
  userEntryOf,
  writtenBy,
} from "./history.js";
import { finalizeInterrupted, handOnSteering } from "./interrupted.js";
import { acknowledge, type LiveFeatures, LivePreviewFeed, unacknowledgeFinalized } from "./live.js";
import type { MediaPreparer } from "./media/prepare.js";
import { withMediaNotes } from "./media/prepare.js";
import { mediaForTurn } from "./media/turn-media.js";
import type { ModelProvider } from "./model.js";
import { modelImageSender } from "./model-images.js";
import type { PendingAnnouncements } from "./pending-announcements.js";
import { queuedReply } from "./queued-reply.js";
import { replyIdOf } from "./reply-id.js";
import { RunStopError } from "./run-errors.js";
import {
  completedRun,
  failureNotice,
  interruptedRun,
  type RunEnd,
  recordKeepsText,
  terminalState,
} from "./run-outcome.js";
import { settledWithin } from "./settled-within.js";
import type { ShownPrefix } from "./shown-prefix.js";
import { handOnTakenSteering, writtenUserRuns } from "./taken-steering.js";
import { type ApprovalMode, ToolCallChain } from "./tool-policy.js";
import type { AgentTool } from "./tools.js";
import { keptMessage } from "./transcript-bounds.js";
import { type AgentTurnResult, runAgentTurn } from "./turn.js";
import { MAX_ANSWER_CHARS, OVERLONG_NOTE, turnEndingNote } from "./turn-ending.js";
import { INTERRUPTED_NOTICE, tellUnanswered } from "./unanswered-notice.js";

export type { ChatEventPublisher } from "./events.js";
export { historyMessages } from "./history.js";
export { LeaseLostError, RunStopError } from "./run-errors.js";

/** Everything a runner needs, wired by the hub app. */
export interface AgentRunnerOptions extends ContextSettings {
  agentId: string;
  sessions: SessionStore;
  runs: RunRecords;
  writers: SessionWriters;
  /** A run's start (record, activity, claim) and end (outcome, release, usage, activity), each one atomic step. */
  steps: RunSteps;
  /** The Redis connection of the claims: the sessions kept in memory between runs are dropped when it reconnects. */
  connection?: Redis;
  replies: ReplySink;
  /** Deletes the live preview a run finalized without resuming left on screen. */
  closeLeftPreview?: (runId: string) => Promise<void>;
  events: ChatEventPublisher;
  /** Where run ends waiting for their replies to settle are kept, so that a stopping process announces them. */
  announcements?: PendingAnnouncements;
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
  runTimeoutMs: number;
  logger: HubLogger;
  /** Asks whichever process runs `runId` to stop it as superseded. */
  supersede: (runId: string) => Promise<void>;
  /** The session's live state: running run, steering, collected messages, usage. */
  activity: SessionActivity;
  /** The capabilities of a channel (block sizes for streaming). */
  capabilitiesOf?: (channel: string) => ChannelCapabilities | undefined;
  /** True when Redis lost its data at or after `since` (epoch ms): leases and claims vanished, not passed on. */
  dataLost?: (since: number) => Promise<boolean>;
  /** Shows "typing…" at a reply target (the channel adapter's), refreshed while a run is active. */
  typing?: (target: MsgContext["replyTarget"]) => Promise<void>;
  /** How often typing is refreshed (platforms drop it after ~5 s). */
  typingIntervalMs?: number;
  /** Turns attachments into images, text and notes for the model (absent: short notes only). */
  media?: MediaPreparer;
  /** Where images the model returns are stored for delivery (`<state dir>/outbox`). */
  outbox?: Outbox;
  /** `limits.maxAttachmentBytes`: larger images from the model become a note. */
  maxAttachmentBytes?: number;
  /** Live previews and acknowledgement reactions, per chat. */
  live?: LiveFeatures;
}

/** How a turn's text reaches the reply: the streamer cuts blocks, the pusher queues them, the preview shows the rest. */
interface TurnIo {
  streamer: BlockStreamer;
  pusher: OrderedBlockPusher;
  signal: AbortSignal;
  interactive?: boolean | undefined;
  preview?: LivePreviewFeed | undefined;
  /** Files and images the model sent so far (an answer of files alone is an answer). */
  sentFiles: number;
  /** Characters of the model's text delivered so far (at most MAX_ANSWER_CHARS). */
  textChars: number;
}

/** One run, once it holds its session: who it is, what it answers, and its writer claim. */
interface ClaimedRun {
  request: RunRequest;
  /** The session, in memory while the run holds its claim. */
  held: HeldSession;
  /** The session's history as of the claim, without this run's own user lines (the turn adds those). */
  history: History;
  /** What an interrupted attempt of this run already handed to delivery. */
  shown: ShownPrefix | undefined;
  /** The answer an interrupted attempt staged with its reply's last push: the run ends with it, no turn. */
  queued: StagedAnswer | undefined;
  /** The messages this turn answers (one, or a collected batch). */
  batch: RunRequest[];
  /** On a resume: the messages the interrupted attempt took from its steering (answered after the batch). */
  steered: RunRequest[];
  attempt: number;
  resuming: boolean;
  claim: WriterClaim;
  /** A stop asked for before the run started. */
  stop: "aborted" | "superseded" | undefined;
  /**
   * Appends transcript lines tagged with the run's writer claim (so every reader drops them once a newer
   * claim is announced), checked first against the claim in Redis unless `check` is false.
   */
  writeChecked: (entries: TranscriptEntry[], options?: { check: boolean }) => Promise<void>;
  /** The answer's last step, staged by the turn for the settle's write (see #settle); empty until then. */
  answer: TranscriptEntry[];
  startedAt: number;
  log: HubLogger;
  /** How the session lane handed the run out (absent for a run started outside it). */
  lane: RunHandOut | undefined;
}

/** What the runner uses of the session lane's hand-out (see `LaneHandOut`). */
export type RunHandOut = Pick<LaneHandOut, "attempt" | "ackStep">;

/** The transcript line of a run's terminal outcome. */
function outcomeEntry(runId: string, end: RunEnd): TranscriptEntry {
  return {
    type: "outcome",
    runId,
    status: end.status,
    stopReason: end.stopReason,
    ...(end.errorText ? { error: end.errorText } : {}),
    at: Date.now(),
  };
}

/** What the model's turn answered, before the run settles. */
interface TurnAnswer {
  text: string;
  stopReason: Parameters<typeof completedRun>[0];
  usage: { inputTokens: number; outputTokens: number };
}

interface TurnResult {
  end: RunEnd;
  text: string;
  reply: ReplyStream;
  /**
   * True when the answer's last block ended the reply in its own (fenced) push: the reply had ended when
   * the turn returned (its `end` comes only after the settle's write; a last block that chunked to
   * nothing queued nothing and ended nothing).
   */
  endedByPush: boolean;
  /** The transcript has the run's answer and outcome already (an earlier attempt wrote them). */
  written?: boolean;
  usage?: { inputTokens: number; outputTokens: number };
  /** Removes the acknowledgement reaction (none: undefined); called once the answer is delivered. */
  unacknowledge?: (() => Promise<void>) | undefined;
}

/**
 * Executes runs: one at a time per session (the session lane guarantees it),
 * from the user's message to one persisted terminal outcome and a settled
 * reply, in three phases: claim the session, run the turn, settle. A run
 * writes its session and queues reply segments only while it holds the
 * writer claim; a newer claim ends it as `superseded`. Order of settlement:
 * transcript and run record first, then the reply is awaited, then clients are told.
 */
export class AgentRunner {
  readonly #held: HeldSessions;

  constructor(private readonly o: AgentRunnerOptions) {
    this.#held = new HeldSessions(o.sessions, undefined, o.connection);
  }

  /**
   * Runs a request to its terminal outcome. Never throws for a failed run: it records `failed`. `stop` is
   * this run's own controller: its owner aborts it to stop the run (a /stop, a lost lease), and the run
   * aborts it itself when it times out (one controller per run, not one per stop and one per turn).
   */
  async run(request: RunRequest, stop: AbortController, lane?: RunHandOut): Promise<void> {
    const { ctx, runId } = request;
    const log = this.o.logger.child({ runId, sessionKey: ctx.sessionKey, channel: ctx.channel });
    if (request.command === "new") return this.#startNewSession(request);
    if (request.contextOnly) {
      const session = await this.o.sessions.resolve(ctx.sessionKey);
      // Assigned, not spread (see writtenBy): the store keeps the line in its cached transcript.
      await this.o.sessions.append(session.sessionId, [
        Object.assign(userEntryOf(request), { contextOnly: true }),
      ]);
      await this.#touched(ctx.sessionKey);
      log.debug("recorded group message as context");
      return;
    }
    try {
      await this.#claimAndRun(request, stop, log, lane);
    } finally {
      // In flight here no longer, whatever became of it (a drain waits only for what this process works on).
      this.o.runs.noteLeft(runId);
    }
  }

  async #claimAndRun(
    request: RunRequest,
    stop: AbortController,
    log: HubLogger,
    lane?: RunHandOut,
  ): Promise<void> {
    const run = await this.#claim(request, log, lane);
    if (!run) return;
    const turn = run.queued ? this.#queuedTurn(run, run.queued) : await this.#runTurn(run, stop);
    // The acknowledgement reaction stays until the answer is on screen: the announce removes it once the
    // reply settles (every segment posted or given up; at the latest after the run timeout); any other way
    // out (the run handed to another process, Redis' data lost, a failure) removes it at once.
    let announcing = false;
    try {
      announcing = await this.#settle(run, turn);
    } finally {
      if (!announcing) void turn.unacknowledge?.();
    }
  }

  // Written outside any claim (after the write): every process's copy of the session is read again.
  // Retried like an outcome: a failure here would run the request (and its write) again.
  async #touched(sessionKey: string): Promise<void> {
    this.#held.forget(sessionKey);
    await withRetries(() => this.o.writers.touch(sessionKey));
  }

  async #startNewSession(request: RunRequest): Promise<void> {
    const { sessionKey } = request.ctx;
    // Read first (retried: a failure after the reset would reset it again), and in the reset's own write.
    const first = await withRetries(() => this.o.writers.newTranscriptLine(sessionKey));
    await this.o.sessions.reset(sessionKey, first);
    await this.#touched(sessionKey);
    await this.answerDirectly(
      request,
      "Started a new session: earlier messages are no longer part of the conversation.",
    );
  }

  // Collected messages are answered by this run; their own records say so. Checked first: a finalize of
  // this run elsewhere (its lease lost while this process was frozen) takes the writer claim before it
  // hands them on, and a follow-up of one of them must not be marked as answered here. False: superseded,
  // this attempt stops (the newer attempt, or the finalize's follow-ups, answer them).
  async #markBatchAnswered(batch: RunRequest[], claim: WriterClaim, log: HubLogger): Promise<boolean> {
    if (batch.length < 2) return true;
    try {
      await this.o.writers.assertCurrent(claim);
    } catch (error) {
      if (!(error instanceof WriterSupersededError)) throw error;
      log.warn("superseded before its collected messages were marked as answered; stopping this attempt");
      return false;
    }
    for (const other of batch) if (other.runId !== claim.runId) await this.#absorbed(other, claim.runId);
    return true;
  }

  // Phase 1: decide whether this run executes (not over, not to be finalized), start it, claim the session.
  async #claim(
    request: RunRequest,
    log: HubLogger,
    lane: RunHandOut | undefined,
  ): Promise<ClaimedRun | undefined> {
    const { ctx, runId } = request;
    const startedAt = Date.now();
    // Collect mode: one turn answers every message collected while the session was busy.
    const batch = request.collect ? await this.o.activity.takeCollected(ctx.sessionKey, runId) : [request];
    if (batch.length === 0) return undefined;
    // Admission wrote the record as "queued": start, activity and claim are one step.
    const begun = await this.o.steps.begin(
      { runId, sessionKey: ctx.sessionKey, channel: ctx.channel },
      this.o.runTimeoutMs,
      runActivityTtlMs(this.o.runTimeoutMs),
      lane?.attempt,
    );
    if (begun.kind === "over") {
      await this.#foundOver(request, begun.status, log);
      return undefined;
    }
    const started = begun.kind === "started" ? begun : await this.#resume(request, log);
    if (!started) return undefined;
    const { attempt, claim } = started;
    const shown = "shown" in started ? started.shown : undefined;
    const queued = "queued" in started ? started.queued : undefined;
    const resuming = begun.kind === "running";
    // One info line per run ("run finished"); its start is debug detail.
    log[resuming ? "info" : "debug"](
      { attempt, resuming },
      resuming ? "run resumed after an interruption" : "run started",
    );
    if (started.superseded) {
      log.warn({ supersededRunId: started.superseded }, "this run supersedes the session's previous writer");
      await this.o.supersede(started.superseded);
    }
    const seen = begun.kind === "started" ? begun.seen : undefined;
    const { held, history, afresh, steered } = await this.#hold(request, batch, claim, seen, resuming);
    if (!(await this.#markBatchAnswered(batch, claim, log))) return undefined;
    const writeChecked = this.#checkedWriter(held, claim);
    const stop = begun.stop;
    return {
      request,
      held,
      history,
      batch,
      steered,
      attempt,
      // An interrupted attempt that wrote nothing (not even the question) left nothing to resume from.
      resuming: resuming && !afresh,
      claim,
      stop,
      writeChecked,
      answer: [],
      startedAt,
      log,
      shown,
      queued,
      lane,
    };
  }

  // The session in memory for the run. Lines carry their claim, announced first (with the user's lines, in
  // one write; on a resume they are in the transcript already): a late append after a newer claim is
  // dropped by every reader.
  async #hold(
    request: RunRequest,
    batch: RunRequest[],
    claim: WriterClaim,
    seen: ClaimSeen | undefined,
    resuming: boolean,
  ): Promise<{ held: HeldSession; history: History; afresh: boolean; steered: RunRequest[] }> {
    const { runId, ctx } = request;
    const writer = `${runId}#${claim.generation}`;
    const users = resuming ? [] : batch.map((r) => writtenBy(userEntryOf(r), writer));
    failpoint("transcript.before-append");
    const held = await this.#held.hold(ctx.sessionKey, seen, [
      { type: "writer", runId, writer, at: Date.now() },
      ...users,
    ]);
    // An attempt killed before this first write (or one begun by admission's step, killed before its
    // runner started) never wrote the user's lines: the resume writes them and starts afresh.
    const afresh = resuming && !held.entries().some((e) => e.type === "user" && e.runId === runId);
    if (afresh) await held.append(batch.map((r) => writtenBy(userEntryOf(r), writer)));
    const steered = resuming ? await this.#recoverSteered(held, runId, writer) : [];
    return { held, history: this.#pastOf(held, batch, steered, users, runId), afresh, steered };
  }

  // What the turn sees of the past: the transcript without its own questions (its batch's user lines, by
  // this attempt or, on a resume, a dead one) and, on a resume, the messages steered into it (they follow).
  #pastOf(
    held: HeldSession,
    batch: RunRequest[],
    steered: RunRequest[],
    users: TranscriptEntry[],
    runId: string,
  ): History {
    const lines = held.entries();
    // A first attempt's own questions are the lines it just appended to its held copy, last: the lines
    // before them are a prefix of the next run's, whose history is built on from this one.
    const start = lines.length - users.length;
    if (users.length > 0 && users.every((u, i) => lines[start + i] === u)) return historyOfHeld(lines, start);
    const batchIds = new Set(batch.map((r) => r.runId));
    const steeredIds = new Set(steered.map((r) => r.runId));
    const ownQuestion = (e: TranscriptEntry) =>
      e.type === "user" && e.runId !== undefined && (batchIds.has(e.runId) || steeredIds.has(e.runId));
    // Left out in place, not filtered out: the history's line numbers stay the transcript's (a compaction's
    // keepFrom is one).
    return historyMessages(lines, runId, ownQuestion);
  }

  // Messages the interrupted attempt took from its steering: those it was killed before writing are
  // written now (the resumed turn answers them), and each one's record says this run answered it (an
  // attempt killed between its write and that mark left it "queued").
  async #recoverSteered(held: HeldSession, runId: string, writer: string): Promise<RunRequest[]> {
    const taken = await this.o.activity.readTaken(runId);
    if (taken.length === 0) return taken;
    const missing = unwritten(held.entries(), taken);
    if (missing.length) await held.append(missing.map((r) => writtenBy(userEntryOf(r), writer)));
    for (const s of taken) await this.#absorbed(s, runId);
    return taken;
  }

  // A run still marked running was interrupted: resumed once more, or finalized without a model call.
  async #resume(
    request: RunRequest,
    log: HubLogger,
  ): Promise<
    | {
        attempt: number;
        claim: WriterClaim;
        superseded: string | undefined;
        shown?: ShownPrefix;
        queued?: StagedAnswer;
      }
    | undefined
  > {
    const { ctx, runId } = request;
    const record = await this.o.runs.get(runId);
    if (record && recoveryDecision(record, Date.now(), this.o.runTimeoutMs) === "finalize") {
      const status = await finalizeInterrupted(this.o, record, log);
      // Not resumed (stale, or out of attempts): the user is told, as a run its lane gives up on is.
      if (status === "interrupted") await this.#tellInterrupted(request, log);
      else if (status) await unacknowledgeFinalized(this.o.live, ctx, log, runId);
      return undefined;
    }
    const attempt = await this.o.runs.start(runId, ctx.sessionKey, this.o.runTimeoutMs, ctx.channel);
    if (attempt === 0) return undefined;
    await this.o.activity.begin(ctx.sessionKey, runId, runActivityTtlMs(this.o.runTimeoutMs));
    const session = await this.o.sessions.resolve(ctx.sessionKey);
    const { claim, superseded } = await this.o.writers.claim(ctx.sessionKey, session.sessionId, runId);
    // What the interrupted attempt already handed to delivery is not sent again if this one repeats it.
    const shown =
      record?.shownChars && record.shownSig ? { chars: record.shownChars, sig: record.shownSig } : undefined;
    // Its whole reply queued (the last push staged the answer): this attempt only finishes the run.
    const queued = await this.o.runs.stagedAnswer(runId);
    return { attempt, claim, superseded, ...(shown ? { shown } : {}), ...(queued ? { queued } : {}) };
  }

  #checkedWriter(held: HeldSession, claim: WriterClaim): ClaimedRun["writeChecked"] {
    const writer = `${claim.runId}#${claim.generation}`;
    return async (entries, options) => {
      if (options?.check !== false) await this.o.writers.assertCurrent(claim);
      failpoint("transcript.before-append");
      await held.append(entries.map((e) => writtenBy(e, writer)));
    };
  }

  // Phase 2: the turn, from the user's lines to the last pushed block, bounded by stop, timeout and lease.
  async #runTurn(run: ClaimedRun, abort: AbortController): Promise<TurnResult> {
    const { ctx } = run.request;
    const caps = this.o.capabilitiesOf?.(ctx.channel);
    const { reply, streamer, pusher, preview } = this.#openReply(run, caps);
    if (!abort.signal.aborted && run.stop) abort.abort(new RunStopError(run.stop));
    const timeout = setTimeout(() => abort.abort(new RunStopError("timed_out")), this.o.runTimeoutMs);
    const stopTyping = this.#startTyping(ctx.replyTarget, run.log, typingDelayOf(caps));
    const unacknowledge = acknowledge(this.o.live, ctx, run.log, run.request.runId);
    let handedOn = false; // the reaction's removal goes with the TurnResult
    try {
      const text = await this.#turn(run, {
        streamer,
        pusher,
        signal: abort.signal,
        interactive: caps?.interactive,
        preview,
        sentFiles: 0,
        textChars: 0,
      });
      handedOn = true;
      return {
        end: completedRun(text.stopReason),
        text: text.text,
        reply,
        endedByPush: reply.ended === true,
        usage: text.usage,
        unacknowledge,
      };
    } catch (error) {
      const end = interruptedRun(error, abort.signal.aborted, abort.signal.reason);
      // Why it stopped: the abort's reason (a timeout, a newer writer), not the abort error the turn threw.
      logInterrupted(run.log, end, abort.signal.aborted ? abort.signal.reason : error);
      streamer.flush();
      await pusher.drained();
      if (end.status === "failed" || end.status === "timed_out")
        pusher.push([failureNotice(error, end.status)]);
      await pusher.drained();
      if (pusher.error) run.log.warn({ err: pusher.error }, "could not queue every block of the reply");
      handedOn = true;
      return { end, text: "", reply, endedByPush: false, unacknowledge };
    } finally {
      // Whatever way the run ended, typing stops before the outcome is announced (the reaction goes once
      // the answer is delivered: see run; at once if this phase itself failed).
      stopTyping();
      if (!handedOn) void unacknowledge?.();
      clearTimeout(timeout);
    }
  }

  // The interrupted attempt queued its whole reply and staged its answer with the last push: the run ends
  // with that answer, written and settled under this attempt's claim (whose `writer` line the resume wrote:
  // the dead attempt's late lines, were it only frozen, are dropped by readers), with no model call and no
  // new reply. Its end is announced once the queued reply settles.
  #queuedTurn(run: ClaimedRun, staged: StagedAnswer): TurnResult {
    run.log.info(
      { replyId: staged.replyId },
      "the interrupted attempt had queued its whole answer; finishing the run with it",
    );
    const { ctx, runId } = run.request;
    // Killed after its settle's write but before the settle's step: the transcript has the end already.
    const written = endWritten(run.held.entries(), runId);
    run.answer = written ? [] : staged.entries;
    return {
      written,
      end: { status: "completed", stopReason: staged.stopReason, abandoned: false },
      text: staged.text,
      reply: queuedReply(this.o.replies, staged.replyId, ctx.replyTarget),
      // No push under this attempt's claim checked it: the settle checks it before writing (#answerEnd).
      endedByPush: false,
      usage: staged.usage,
      // The dead attempt's acknowledgement reaction comes off once the queued answer is delivered.
      unacknowledge: acknowledge(this.o.live, ctx, run.log, runId),
    };
  }

  // The note the answer's last push writes in its own step: the answer staged (see RunRecords.answerNote),
  // so that a crash between that push and the settle leaves the run to be finished, not answered again.
  #answerNote(
    run: ClaimedRun,
    result: { text: string; stopReason: TurnAnswer["stopReason"]; usage: TurnAnswer["usage"] },
  ) {
    if (run.answer.length === 0) return undefined;
    const { runId } = run.request;
    return this.o.runs.answerNote(runId, {
      replyId: replyIdOf(runId, run.attempt),
      entries: run.answer,
      text: result.text,
      stopReason: completedRun(result.stopReason).stopReason,
      usage: result.usage,
      recordKeepsText: recordKeepsText(run.request.ctx.channel),
    });
  }

  async #turn(run: ClaimedRun, io: TurnIo): Promise<TurnAnswer> {
    const { request, history, writeChecked, log } = run;
    const { ctx, runId } = request;
    const { streamer, pusher, signal } = io;
    // On a resume, this run's own earlier lines are left out: its user message is re-added below.
    if (signal.aborted) throw signal.reason;
    // Attachments: refusals are told first; a message that was nothing but refused files needs no model.
    const media = await mediaForTurn(this.o.media, run.batch, signal, log);
    pusher.push(media.notices);
    if (media.onlyRefusals) return this.#answeredByNotices(media.notices, io, writeChecked, runId);
    const { provider, model } = this.o.resolveModel(this.o.modelRef);
    const policy = this.o.toolsFor(ctx);
    // One literal (not a spread plus fields): an object of one fixed shape on every run.
    const context: ContextInput = {
      ctx,
      runId,
      history,
      userText: media.userText,
      steered: run.steered.map((s) => withMediaNotes(s.ctx)),
      resuming: run.resuming,
      tools: policy.tools,
      provider,
      model,
      signal,
      writeChecked,
      log,
    };
    const messages = await assembleContext(context, this.o, media.images);
    const chain = this.#toolChain(ctx, policy, io);
    const result = await runAgentTurn({
      runId,
      sessionKey: ctx.sessionKey,
      provider,
      model,
      messages,
      tools: policy.tools,
      chain,
      signal,
      onText: (delta) => this.#deliverText(io, delta),
      sendFile: (file, caption) => this.#sendFile(io, file, caption),
      onImage: modelImageSender(
        { outbox: this.o.outbox, maxBytes: this.o.maxAttachmentBytes ?? 20 * 1024 * 1024, log },
        (file) => this.#sendFile(io, file),
        async (text) => pusher.push([...streamer.flush(), text]),
      ),
      // A tool step is checked first: readers drop a superseded writer's line only after the newer claim's
      // own `writer` line, which that claim writes after taking the claim in Redis (and a bare claim
      // never): a line appended unchecked in between is read back by every reader (the next run's context,
      // chat.history, `hub sessions show`) though its reply was fenced and never delivered. The answer's
      // last step is staged: the settle writes it with the outcome, checked by the fenced push of its last
      // block or by a check of its own (see #answerEnd).
      onCommit: async (step, final) => {
        const entries = step.map((m) => toEntry(keptMessage(m), runId));
        if (final) run.answer = entries;
        else await writeChecked(entries);
      },
      steeringPending: () => this.o.activity.hasSteering(runId),
      takeSteering: () => this.#takeSteered(run),
    });
    return this.#finishAnswer(run, io, result);
  }

  // A delta of the model's text to the reply. Past the most an answer sends the rest is not delivered (a
  // broken model's megabytes would be a thousand messages holding the chat's queue for most of an hour).
  #deliverText(io: TurnIo, delta: string): void {
    const room = MAX_ANSWER_CHARS - io.textChars;
    if (room <= 0) return;
    const kept = delta.length > room ? delta.slice(0, room) : delta;
    io.textChars += kept.length;
    io.pusher.push(io.streamer.push(kept));
    io.preview?.update();
  }

  // The answer's last block ends the reply in its own push, which stages the answer (see #answerNote); a
  // turn that ended without a whole answer says so after it (never silence).
  async #finishAnswer(run: ClaimedRun, io: TurnIo, result: AgentTurnResult) {
    const answered = result.text.trim() !== "" || io.sentFiles > 0;
    const ending =
      io.textChars >= MAX_ANSWER_CHARS ? OVERLONG_NOTE : turnEndingNote(result.stopReason, answered);
    await io.pusher.finish(
      [...io.streamer.flush(), ...(ending ? [ending] : [])],
      this.#answerNote(run, result),
    );
    if (io.pusher.error !== undefined) throw io.pusher.error;
    // The usage is added to the session's totals when the run settles (one step with its outcome). The text
    // is the answer as delivered: a record that keeps it (the web chat's) keeps no more than was sent.
    const text = result.text.length > MAX_ANSWER_CHARS ? result.text.slice(0, MAX_ANSWER_CHARS) : result.text;
    return { text, stopReason: result.stopReason, usage: result.usage };
  }

  // Messages steered into the run, taken in at a tool-batch boundary: written to its transcript, then each
  // one's record says this run answers it. The take returns every message the run took so far; those
  // written already were given to the model before.
  async #takeSteered(run: ClaimedRun): Promise<string[]> {
    const { runId } = run.request;
    const taken = await this.o.activity.takeSteered(runId, this.o.writers.fenceOf(run.claim));
    const steered = unwritten(run.held.entries(), taken);
    if (steered.length === 0) return [];
    try {
      failpoint("run.after-take-steering");
      await run.writeChecked(steered.map(userEntryOf));
    } catch (error) {
      // The run fails here. Superseded, it is the newer attempt's to answer them (the fenced take proves
      // that attempt read them at its start); otherwise they are handed on.
      if (!(error instanceof WriterSupersededError || error instanceof WriteFencedError))
        await this.#handOnUnwritten(run, steered, error);
      throw error;
    }
    // A finalize of this run elsewhere (its lease lost while this process was frozen) takes the writer
    // claim before it hands these on: checked again right before they are marked as answered here.
    await this.o.writers.assertCurrent(run.claim);
    failpoint("run.after-steered-write");
    for (const s of steered) await this.#absorbed(s, runId);
    return steered.map((s) => withMediaNotes(s.ctx));
  }

  // Steered messages the run took and could not write run as follow-ups, except those whose line landed all
  // the same (an append's failure does not say it wrote nothing), which fail with the run. Handed on the way
  // the run's end hands on (one recorded, lease-fenced step each), so that end, or a finalize of the run
  // elsewhere, reading the same taken messages, does not queue one a second time.
  async #handOnUnwritten(run: ClaimedRun, steered: RunRequest[], error: unknown): Promise<void> {
    const outcome = {
      status: "failed" as const,
      error: error instanceof Error ? error.message : String(error),
    };
    await this.o.activity.handOnNow(run.request.ctx.sessionKey, run.request.runId, async (handOn) => {
      const written = await this.o.sessions.read(run.held.record.sessionId).catch(() => []);
      await handOnTakenSteering(
        { runs: this.o.runs, requeue: handOn },
        steered,
        writtenUserRuns(written),
        outcome,
      );
    });
  }

  async #answeredByNotices(
    notices: string[],
    io: { pusher: OrderedBlockPusher },
    writeChecked: ClaimedRun["writeChecked"],
    runId: string,
  ): Promise<TurnAnswer> {
    const text = notices.join("\n\n");
    await writeChecked([toEntry({ role: "assistant", content: text }, runId)]);
    await io.pusher.drained();
    if (io.pusher.error !== undefined) throw io.pusher.error;
    return { text, stopReason: "stop", usage: { inputTokens: 0, outputTokens: 0 } };
  }

  // A file goes in its place: what the model said before it is flushed first, then the file is queued.
  async #sendFile(
    io: Pick<TurnIo, "streamer" | "pusher" | "sentFiles">,
    file: OutboxFile,
    caption?: string,
  ): Promise<void> {
    io.pusher.push(io.streamer.flush());
    io.pusher.pushFile(file, caption);
    io.sentFiles++;
    await io.pusher.drained();
    if (io.pusher.error !== undefined) throw io.pusher.error;
  }

  // Tools pass one chain; an `ask` tool posts its approval prompt in order with the answer so far.
  #toolChain(ctx: MsgContext, policy: ReturnType<AgentRunnerOptions["toolsFor"]>, io: TurnIo): ToolCallChain {
    const ask = async (call: { name: string }, args: unknown) => {
      const code = await this.o.approvals.open(ctx.sessionKey, policy.approvalTimeoutMs);
      const seconds = Math.round(policy.approvalTimeoutMs / 1000);
      // What the model said before asking goes out first.
      io.pusher.push(io.streamer.flush());
      io.pusher.push([approvalPrompt(call.name, args, code, seconds)]);
      await io.pusher.drained();
      return this.o.approvals.wait(code, policy.approvalTimeoutMs, io.signal);
    };
    return new ToolCallChain({
      allowed: new Set(policy.tools.map((t) => t.spec.name)),
      approvals: policy.approvals,
      ...(io.interactive !== false ? { ask } : {}),
    });
  }

  // Each attempt gets its own reply, so a resumed answer never interleaves with the interrupted one.
  // Fenced by the writer claim in Redis: once a newer claim exists, not one more segment is queued.
  // With a live preview, blocks are cut only when a message is full; the preview shows the rest, and
  // every attempt shares the run's preview, so a resumed one finalizes what a crashed one showed.
  #openReply(run: ClaimedRun, caps: ChannelCapabilities | undefined) {
    const { request, attempt, claim } = run;
    const { ctx, runId } = request;
    const live = this.o.live?.previewFor(ctx) === true;
    const reply = this.o.replies.open(replyIdOf(runId, attempt), ctx.replyTarget, {
      fence: this.o.writers.fenceOf(claim),
      runId,
      sessionKey: ctx.sessionKey,
      ...(live ? { preview: { key: runId, resumed: attempt > 1 } } : {}),
    });
    const maxChars = Math.min(caps?.textLimit ?? 3000, 3000);
    const minChars = live ? maxChars : Math.min(caps?.streamMinChars ?? 1, caps?.textLimit ?? 3000);
    const streamer = new BlockStreamer({ minChars, maxChars });
    // A resumed attempt drops what an interrupted one finished (its blocks, a live preview's full messages
    // too: they are final on screen) and, with a live preview, finalizes the preview that one left.
    const pusher = new OrderedBlockPusher(reply, {
      shown: run.shown,
      noteOf: (shown) => this.o.runs.shownNote(runId, shown),
    });
    const interval = Math.max(this.o.live?.previewIntervalMs ?? 1000, caps?.minSendIntervalMs ?? 0);
    const preview = live ? new LivePreviewFeed(pusher, streamer, interval) : undefined;
    return { reply, streamer, pusher, preview };
  }

  // Phase 3: the terminal outcome first (transcript, if we still own it, and the run record), then settle, then tell.
  // Resolves true when the end is announced (after delivery settles, see #announce).
  async #settle(run: ClaimedRun, turn: TurnResult): Promise<boolean> {
    const { request, claim, attempt, log } = run;
    const { text, reply } = turn;
    const end = await this.#answerEnd(run, turn);
    // A claim or lease that vanished with Redis's data was not taken over: nobody else will end this run.
    if ((end.abandoned || end.status === "superseded") && (await this.o.dataLost?.(run.startedAt))) {
      await this.#endAfterDataLoss(request, run.held.record.sessionId, log);
      return false;
    }
    if (end.abandoned) {
      // Another process owns the session now and resumes this run; deciding its outcome here would cut that short.
      log.warn("lost the session lane; the run is left to the process that took it over");
      return false;
    }
    const error = end.errorText ? { error: end.errorText } : {};
    if (end.status !== "superseded" && !turn.written) await this.#writeEnd(run, end);
    // Written, not yet settled: a resume or finalize finds the answer in the transcript (TurnResult.written).
    failpoint("run.before-settle");
    const kept = recordKeepsText(request.ctx.channel) ? { text } : {};
    const outcome = { status: end.status, ...kept, stopReason: end.stopReason, ...error };
    // Outcome, claim release, usage and the end of activity in one step; messages steered in after the
    // last batch boundary were never seen by this run: they run next.
    // The run's lane item is acked in the same step, and the session's next run begun there for this slot,
    // when its reply is queued whole: the session's next reply can then never be queued before its end.
    const { runTimeoutMs } = this.o;
    const lane =
      run.lane && reply.ended
        ? { ack: run.lane.ackStep(), timeoutMs: runTimeoutMs, activeTtlMs: runActivityTtlMs(runTimeoutMs) }
        : undefined;
    const { decided, released } = await this.o.steps.settle(
      claim,
      { outcome, attempt, ...(turn.usage ? { usage: turn.usage } : {}) },
      lane,
    );
    // Settled (and, with the lane's ack, the session's next run begun) but nothing after it done yet.
    failpoint("run.after-settle");
    // Released by this settle: nothing else wrote the session under this claim, so the next run here may
    // start from this copy (if its claim proves nothing happened in between).
    if (released) run.held.keep();
    const segments = await reply.end();
    if (!decided) {
      log.warn({ status: end.status }, "run outcome was already decided elsewhere; not announcing");
      return false;
    }
    // The reply is handed to delivery: the run's lane and concurrency slot are free now, and the end is
    // announced once delivery settles (the outcome is already persisted, so a crash here loses no run).
    const announcement = this.#announce(run, turn, segments).catch((error) =>
      log.warn({ err: error }, "could not announce the end of the run"),
    );
    this.o.announcements?.track(announcement);
    return true;
  }

  // How the run ended, once its staged answer (the turn's last step, see #turn) may be written: the push
  // of its last block checked the writer claim when that push ended the reply (the runner's replies are
  // fenced by the claim), later than a check before it would have; else the claim is checked here, and a
  // newer one ends the run as superseded (its answer unwritten), as a failed check during the turn does.
  async #answerEnd(run: ClaimedRun, turn: TurnResult): Promise<RunEnd> {
    if (run.answer.length === 0 || turn.endedByPush) return turn.end;
    try {
      await this.o.writers.assertCurrent(run.claim);
      return turn.end;
    } catch (error) {
      run.answer = [];
      const end = interruptedRun(error, false, undefined);
      logInterrupted(run.log, end, error);
      return end;
    }
  }

  // The transcript's end of the run: its staged answer and its outcome, in one append. Not checked: the
  // answer's check is done (see #answerEnd), the run ends either way, and a newer writer's readers drop
  // the tagged lines.
  async #writeEnd(run: ClaimedRun, end: RunEnd): Promise<void> {
    const lines = [...run.answer, outcomeEntry(run.request.runId, end)];
    try {
      await run.writeChecked(lines, { check: false });
    } catch (error) {
      if (run.answer.length === 0) run.log.warn({ err: error }, "outcome not written to the transcript");
      else run.log.error({ err: error }, "the answer and its outcome were not written to the transcript");
    }
  }

  async #announce(run: ClaimedRun, turn: TurnResult, segments: number): Promise<void> {
    const { request, log } = run;
    const { ctx, runId } = request;
    const { end, text, reply } = turn;
    // A reply not ended here (handed to another process) is not waited for by its reaction; a wait that
    // failed (Redis down) removes it too.
    if (!reply.ended) void turn.unacknowledge?.();
    const stopping = this.o.announcements?.stopWaiting;
    const settlement = await settledWithin(reply, this.o.runTimeoutMs, stopping).finally(
      () => void turn.unacknowledge?.(),
    );
    if (!settlement)
      log.warn(
        { segments },
        stopping?.aborted
          ? "the hub stops before the reply settled; announcing the end of the run now"
          : "reply not settled within the run timeout; announcing the end anyway",
      );
    // A reply an earlier attempt queued (see #queuedTurn) counts its segments in its settlement.
    const total = settlement?.total ?? segments;
    log.info({ status: end.status, segments: total, ...(settlement ?? {}) }, "run finished");
    await this.o.events.publish({
      runId,
      sessionKey: ctx.sessionKey,
      seq: total,
      state: terminalState(end.status),
      text: end.status === "completed" ? text : (end.errorText ?? end.status),
    });
  }

  // Redis lost its data mid-run: record the outcome again, close the transcript's turn and tell the user, unfenced
  // (the claim the fence checks is gone with the data).
  async #endAfterDataLoss(request: RunRequest, sessionId: string, log: HubLogger): Promise<void> {
    const { runId, ctx } = request;
    const error = "the hub's Redis lost its data while this message was being answered";
    log.error("run ended: Redis lost its data while it was in flight");
    await this.o.runs.recordAfterDataLoss(
      runId,
      ctx.sessionKey,
      { status: "failed", error },
      recordedSender(runId, ctx),
    );
    await this.o.sessions.append(sessionId, [
      { type: "outcome", runId, status: "failed", stopReason: "internal_error", error, at: Date.now() },
    ]);
    const notice = this.o.replies.open(`${runId}.lost`, ctx.replyTarget, {
      runId,
      sessionKey: ctx.sessionKey,
    });
    await notice.push(
      "Sorry, I lost track of your message because of a problem on my side. Please send it again.",
    );
    await notice.end();
    await this.o.activity.end(ctx.sessionKey, runId);
    await this.o.events.publish({ runId, sessionKey: ctx.sessionKey, seq: 0, state: "error", text: error });
  }

  // A run handed out again and found over: its outcome may have been decided by a step that died before
  // handing on what was steered into it, or before deleting its preview and telling its chat (each done
  // once, whoever repeats it).
  async #foundOver(request: RunRequest, status: string, log: HubLogger): Promise<void> {
    const { runId, ctx } = request;
    log.info({ status }, "run already finished; not running it again");
    await handOnSteering(this.o, { runId, sessionKey: ctx.sessionKey });
    if (status !== "interrupted") return;
    await this.o.closeLeftPreview?.(runId);
    await this.#tellInterrupted(request, log);
  }

  // An interrupted run's notice (queued once per run, so the finalize and the run's later hand-out can both
  // ask), its reaction taken off once the notice is out.
  async #tellInterrupted(request: RunRequest, log: HubLogger): Promise<void> {
    const { runId, ctx } = request;
    const unacknowledge = () => unacknowledgeFinalized(this.o.live, ctx, log, runId);
    await tellUnanswered({ ...this.o, unacknowledge }, request, INTERRUPTED_NOTICE, log);
  }

  /** Answers a request with a fixed text (commands), through the same reply and outcome path as a run. */
  answerDirectly(request: RunRequest, text: string): Promise<void> {
    return answerDirectly(this.o, request, text);
  }

  // A steered message is answered by the run it joined; its own run record (queued since admission) says
  // so in one step: a start and then a finish left it running across a crash in between, for restart
  // recovery to end as interrupted. Not decided: it was over already (a retry of this same step included).
  async #absorbed(request: RunRequest, intoRunId: string): Promise<void> {
    const text = `(answered in run ${intoRunId})`;
    if (!(await this.o.runs.finish(request.runId, { status: "completed", text }))) return;
    await this.o.events.publish({
      runId: request.runId,
      sessionKey: request.ctx.sessionKey,
      seq: 0,
      state: "final",
      text: "",
    });
  }

  #startTyping(target: MsgContext["replyTarget"], log: HubLogger, delayMs: number): () => void {
    const typing = this.o.typing;
    if (!typing) return () => {};
    const send = () =>
      void typing(target).catch((error) => log.debug({ err: error }, "typing indicator failed"));
    let timer: NodeJS.Timeout | undefined;
    const start = () => {
      send();
      timer = setInterval(send, this.o.typingIntervalMs ?? 4500);
    };
    // Typing costs a platform call per answer: it is shown only when the answer is slow (`typingDelayOf`).
    const first = delayMs > 0 ? setTimeout(start, delayMs) : undefined;
    if (delayMs <= 0) start();
    return () => {
      clearTimeout(first);
      clearInterval(timer);
    };
  }
}

/** The requests whose user line is not in the transcript yet, in order. */
function unwritten(entries: readonly TranscriptEntry[], requests: RunRequest[]): RunRequest[] {
  if (requests.length === 0) return requests;
  const written = writtenUserRuns(entries);
  return requests.filter((r) => !written.has(r.runId));
}

/** Logs how a run that threw ended: a stop someone asked for (/stop, chat.abort) is no failure. */
function logInterrupted(log: HubLogger, end: RunEnd, error: unknown): void {
  if (end.status === "aborted" && !end.abandoned)
    log.info({ status: end.status, stopReason: end.stopReason }, "run stopped");
  else if (end.status === "failed") log.error({ err: error, status: end.status }, "run did not complete");
  // A timeout, a newer writer or a lost lane is the hub working as designed, not a fault in it: the
  // reason in words, without a stack.
  else log.warn({ status: end.status, reason: describeError(error) }, "run did not complete");
}
