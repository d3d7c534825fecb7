import { failpoint } from "@hub/core";
import { type AckStep, loadScript, runScript, scriptWith } from "@hub/queue";
import type { Redis } from "ioredis";
import type { SessionActivity } from "./activity.js";
import { generationBase } from "./generation-clock.js";
import {
  RUN_RECORD_TTL_SECONDS,
  type RunOutcome,
  RunRecords,
  type StartedRun,
  withRetries,
} from "./run-records.js";
import { requestsOf } from "./stored-requests.js";
import type { SessionWriters, WriterClaim } from "./writer.js";

const BEGIN = loadScript(new URL("./scripts/begin.lua", import.meta.url));
const SETTLE = scriptWith(new URL("./scripts/settle.lua", import.meta.url), "ack-next");

/** How long a run's session counts as running it (its timeout and a minute of slack for its end). */
export function runActivityTtlMs(runTimeoutMs: number): number {
  return runTimeoutMs + 60_000;
}

/** How `begin` found a run. */
export type RunBegin =
  | { kind: "over"; status: string }
  /** Marked running: an interrupted attempt; resume or finalize it through the separate steps. */
  | { kind: "running"; stop: StopMark | undefined }
  | {
      kind: "started";
      attempt: number;
      claim: WriterClaim;
      /** The session's previous writer, if another run held the claim. */
      superseded: string | undefined;
      /** A stop asked for before the run started. */
      stop: StopMark | undefined;
      /** What the claim found: whether a process's in-memory copy of the session is still current. */
      seen: ClaimSeen;
    };

/**
 * What a claim found in the session's writer record: the new generation and the one it followed, whether
 * the previous claim had been released (its run settled), and the count of writes made outside any claim.
 */
export interface ClaimSeen {
  generation: number;
  /** The generation the claim replaced (undefined when there was none, or the step does not say). */
  previousGeneration: number | undefined;
  previousReleased: boolean;
  touched: string;
}

/** A stop asked for a run ("aborted" by /stop or an interrupt, "superseded" by a newer claim). */
export type StopMark = "aborted" | "superseded";

const stopMark = (raw: string): StopMark | undefined =>
  raw === "aborted" || raw === "superseded" ? raw : undefined;

/**
 * A run's start and end each as one atomic Redis step, fused from the
 * separate steps (run record, session activity, writer claim, usage) so a
 * message costs a few round trips instead of a dozen: `begin` is start +
 * activity + claim + the stop mark, `settle` is finish + release + usage +
 * end of activity. Keys come from the classes that own them.
 */
export class RunSteps {
  constructor(
    private readonly redis: Redis,
    private readonly runs: RunRecords,
    private readonly writers: SessionWriters,
    private readonly activity: SessionActivity,
  ) {}

  // Runs begun for this process's runner in the step that handed them to it (admission's, or the previous
  // run's settle), by runId, as begin.lua's reply, until the runner starts them (at once, in that slot).
  // One that another process took over meanwhile (this one lost the lane) is dropped after a while.
  readonly #begunHere = new Map<string, { at: number; reply: Array<string | number> }>();

  #noteBegunHere(runId: string, reply: Array<string | number>): void {
    const now = Date.now();
    for (const [id, begun] of this.#begunHere) {
      if (now - begun.at < 600_000) break;
      this.#begunHere.delete(id);
    }
    this.#begunHere.delete(runId);
    this.#begunHere.set(runId, { at: now, reply });
  }

  /**
   * Notes a run admission began in its step (admit.lua's {attempt, generation, previous writer,
   * touched, previous generation}), so this process's `begin` of it is that start instead of another step.
   */
  begunInAdmission(run: StartedRun, begun: Array<string | number>): void {
    const [attempt = 1, generation = 0, previous = "", touched = "", previousGeneration = ""] = begun;
    this.#noteBegunHere(run.runId, [
      "started",
      attempt,
      generation,
      previous,
      "",
      touched,
      previousGeneration,
    ]);
  }

  /**
   * Starts a queued run and claims its session for it (see begin.lua). `laneAttempt` is the lane's
   * hand-out: a start made in the step that handed the run out holds only for its first.
   */
  async begin(run: StartedRun, timeoutMs: number, activeTtlMs: number, laneAttempt = 1): Promise<RunBegin> {
    const here = this.#begunHere.get(run.runId);
    if (here) {
      this.#begunHere.delete(run.runId);
      if (laneAttempt === 1) return this.#started(run, here.reply);
    }
    const { runId, sessionKey } = run;
    const keys = [this.runs.keyOf(runId), this.writers.keyOf(sessionKey)];
    const args = [
      runId,
      sessionKey,
      Date.now(),
      timeoutMs,
      RUN_RECORD_TTL_SECONDS,
      activeTtlMs,
      generationBase(),
    ];
    const reply = (await runScript(this.redis, BEGIN, keys, args)) as [string, ...Array<string | number>];
    if (reply[0] === "over") return { kind: "over", status: String(reply[1]) };
    if (reply[0] === "running") return { kind: "running", stop: stopMark(String(reply[1])) };
    return this.#started(run, reply);
  }

  // A start's reply: ["started", attempt, generation, previous writer or '', stop mark or '', touched,
  // previous generation or ''].
  #started(run: StartedRun, reply: Array<string | number>): Extract<RunBegin, { kind: "started" }> {
    const { runId, sessionKey } = run;
    const [, attempt, generation, previous, stop, touched, previousGeneration] = reply;
    this.runs.noteStarted(run);
    return {
      kind: "started",
      attempt: Number(attempt),
      claim: { sessionKey, runId, generation: Number(generation) },
      superseded: previous && previous !== runId ? String(previous) : undefined,
      stop: stopMark(String(stop)),
      seen: {
        generation: Number(generation),
        previousGeneration: previousGeneration ? Number(previousGeneration) : undefined,
        previousReleased: previous === "",
        touched: String(touched),
      },
    };
  }

  /**
   * Decides a run's outcome (once; false if it was decided already), releases
   * its claim, adds its usage and ends its activity, in one step retried until
   * Redis has it. Messages steered in late (the run never took them) are queued in the session's lane,
   * in order, and any steered in since after them (see `SessionActivity.end`), before the activity
   * ends. `released` is false when a newer claim held the session by then. Given the run's lane `ack`,
   * the lane item is acked in the same step, and the next run it hands to this process is begun there
   * (see settle.lua) for `begin` to take.
   */
  async settle(
    claim: WriterClaim,
    end: { outcome: RunOutcome; attempt: number; usage?: { inputTokens: number; outputTokens: number } },
    lane?: { ack: AckStep; timeoutMs: number; activeTtlMs: number },
  ): Promise<{ decided: boolean; released: boolean }> {
    const { runId, sessionKey } = claim;
    const activity = this.activity.keysOf(sessionKey, runId);
    const keys = [
      this.runs.keyOf(runId),
      this.writers.keyOf(sessionKey),
      activity.steer,
      activity.usage,
      this.runs.answerKeyOf(runId),
    ];
    const outcome = RunRecords.outcomeFields(end.outcome);
    const args = [
      runId,
      end.attempt,
      claim.generation,
      end.usage?.inputTokens ?? 0,
      end.usage?.outputTokens ?? 0,
      outcome.length,
      ...outcome,
    ];
    if (lane) {
      keys.push(...lane.ack.keys);
      // The last: the next run's generation floor, set for each try below.
      args.push(...lane.ack.args, lane.timeoutMs, lane.activeTtlMs, this.runs.keyOf(""), 0);
    }
    const [decided, released, steered, startedAt, acked, answer, begun] = await withRetries(async () => {
      // The next run's generation floor (the last argument) read again for each try: one after an outage
      // must not take the time before it.
      if (lane) args[args.length - 1] = generationBase();
      return (await runScript(this.redis, SETTLE, keys, args)) as SettleReply;
    });
    if (acked === "lost") lane?.ack.lost();
    else if (acked === "acked") lane?.ack.acked(answer);
    if (begun) {
      const [next, ...values] = begun;
      this.#noteBegunHere(String(next), ["started", ...values]);
    }
    if (decided === 1)
      await this.runs.noteFinished(runId, end.outcome.status, Number(startedAt) || undefined);
    if (steered.length > 0) {
      await this.activity.end(sessionKey, runId, async (handOn) => {
        failpoint("run.before-late-requeue");
        for (const request of requestsOf(steered)) await handOn(request);
      });
    }
    return { decided: decided === 1, released: released === 1 };
  }
}

// settle.lua's reply: {decided, released, steered, startedAt[, 'lost' | 'acked', ack answer, begun]}.
type SettleReply = [
  number,
  number,
  string[],
  string | null,
  ("lost" | "acked")?,
  unknown?,
  Array<string | number>?,
];
