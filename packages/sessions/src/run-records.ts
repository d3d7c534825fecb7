import { randomUUID } from "node:crypto";
import type { HashNote, ValueNote } from "@hub/core";
import { loadScript, mailboxHeads, runScript } from "@hub/queue";
import type { Redis } from "ioredis";
import { z } from "zod";
import { readStagedAnswer, type StagedAnswer, stagedAnswerNote } from "./staged-answer.js";

/** Terminal and non-terminal states of a run record. */
export const RunRecordStatusSchema = z.enum([
  "queued",
  "running",
  "completed",
  "aborted",
  "superseded",
  "failed",
  "timed_out",
  "interrupted",
]);
/** A run's terminal status. */
export type TerminalStatus = Exclude<z.infer<typeof RunRecordStatusSchema>, "running" | "queued">;

const RunRecordSchema = z.object({
  runId: z.string(),
  sessionKey: z.string(),
  status: RunRecordStatusSchema,
  attempt: z.coerce.number().int(),
  /** When the first attempt started; liveness is judged from it. */
  startedAt: z.coerce.number(),
  timeoutMs: z.coerce.number().int().optional(),
  endedAt: z.coerce.number().optional(),
  text: z.string().optional(),
  error: z.string().optional(),
  stopReason: z.string().optional(),
  /** How much of the answer was handed to delivery (see `noteShown`). */
  shownChars: z.coerce.number().int().optional(),
  shownSig: z.string().optional(),
  /** Who sent the message (`runSender`); absent in records written before it was kept. */
  sender: z.string().optional(),
});
/** What the hub durably knows about one run: its state and, once over, its result. */
export type RunRecord = z.infer<typeof RunRecordSchema>;

/** A run's terminal outcome as its record keeps it. */
export interface RunOutcome {
  status: TerminalStatus;
  text?: string;
  error?: string;
  stopReason?: string;
  /** When it was decided (ms; default: when its fields are built). A retried step sends the same time. */
  endedAt?: number;
}

/** Retries `step` (up to 10 tries, backing off), for steps nothing may go on without (a run's outcome). */
export async function withRetries<T>(step: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await step();
    } catch (error) {
      if (tries >= 10) throw error;
      await new Promise((r) => setTimeout(r, 100 * tries));
    }
  }
}

/** How long a run record (also the `chat.send` idempotency record) is kept after admission wrote it (or its first start). */
export const RUN_RECORD_TTL_SECONDS = 7 * 24 * 3600;

/** The name of the session lane's mailbox (see `SessionLane`), whose head items are the runs in flight. */
export const SESSION_LANE_NAME = "runs";
const RECORD_TTL_SECONDS = RUN_RECORD_TTL_SECONDS;

const START = loadScript(new URL("./scripts/start.lua", import.meta.url));

const FINISH = loadScript(new URL("./scripts/finish.lua", import.meta.url));

const RECORD_LOST = loadScript(new URL("./scripts/record-lost.lua", import.meta.url));

const MARK_STOP = loadScript(new URL("./scripts/mark-stop.lua", import.meta.url));

/** A run whose attempt started, as those who watch runs (metrics, the drain's log) name it. */
export interface StartedRun {
  runId: string;
  sessionKey: string;
  channel?: string | undefined;
}

/**
 * Run records in Redis (`<prefix>:run:<runId>`), readable from every process:
 * the gateway answers a repeated `chat.send` with them, restart recovery scans
 * the running ones, and a run's terminal outcome is decided here exactly once,
 * before anyone is told.
 */
export class RunRecords {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  #key(runId: string): string {
    return `${this.prefix}:run:${runId}`;
  }

  // Runs in flight that are not their session lane's head (see start.lua); every other run is one.
  get #outsideLane(): string {
    return `${this.prefix}:runs:outside-lane`;
  }

  /** The Redis key of a run's record (for scripts that fuse steps). */
  keyOf(runId: string): string {
    return this.#key(runId);
  }

  /** The fields `finish` writes for an outcome. */
  static outcomeFields(outcome: RunOutcome): Array<string | number> {
    const fields: Array<string | number> = [
      "status",
      outcome.status,
      "endedAt",
      outcome.endedAt ?? Date.now(),
    ];
    if (outcome.text !== undefined) fields.push("text", outcome.text);
    if (outcome.error !== undefined) fields.push("error", outcome.error);
    if (outcome.stopReason !== undefined) fields.push("stopReason", outcome.stopReason);
    return fields;
  }

  /**
   * Marks a run as running; returns which attempt this is (1 the first time), or 0 if it is already over.
   * `outsideLane`: the run is not its session lane's head (a command answered at admission, a message
   * absorbed by another run), so `running` finds it through a small set instead. `sender` (`runSender`) is
   * kept in a record this start creates (admission, which creates the others, keeps it itself).
   */
  async start(
    runId: string,
    sessionKey: string,
    timeoutMs: number,
    channel?: string,
    options: { outsideLane?: boolean; sender?: string } = {},
  ): Promise<number> {
    const attempt = (await runScript(
      this.redis,
      START,
      options.outsideLane ? [this.#key(runId), this.#outsideLane] : [this.#key(runId)],
      [runId, sessionKey, Date.now(), timeoutMs, RECORD_TTL_SECONDS, options.sender ?? ""],
    )) as number;
    if (attempt > 0) this.noteStarted({ runId, sessionKey, channel });
    return attempt;
  }

  /** Called once a run's attempt has started (here or in a fused step); metrics override it. */
  noteStarted(_run: StartedRun): void {}

  /**
   * Called once this process stops working on a run, whatever became of it: decided here (after
   * `noteFinished`), left to the process that took its session over, decided elsewhere, or failed (its
   * lane hands it out again); metrics override it.
   */
  noteLeft(_runId: string): void {}

  /** Called once a run's outcome is decided (here or in a fused step), with its first start if known. */
  async noteFinished(_runId: string, _status: TerminalStatus, _startedAt?: number): Promise<void> {}

  /** The record of a run, or undefined if there is none. */
  async get(runId: string): Promise<RunRecord | undefined> {
    const raw = await this.redis.hgetall(this.#key(runId));
    if (!raw.runId) return undefined;
    return RunRecordSchema.parse(raw);
  }

  /**
   * How much of a run's answer was handed to delivery (its text's length and hash), as a note written
   * with the push that handed it over (see `ReplyStream.push`), so an attempt resumed after a crash
   * does not send that part again.
   */
  shownNote(runId: string, shown: { chars: number; sig: string }): HashNote {
    return { key: this.#key(runId), fields: { shownChars: shown.chars, shownSig: shown.sig } };
  }

  /**
   * The Redis key of a run's staged answer (see `answerNote`): a namespace of its own, so that what lists
   * `run:*` finds run records (hashes) only.
   */
  answerKeyOf(runId: string): string {
    return `${this.prefix}:answer:${runId}`;
  }

  /**
   * The note that stages a run's answer, written by the fenced push of its last block (so the push and
   * the answer cannot be parted by a crash) and deleted by the run's settle: a run found interrupted with
   * it had its whole reply queued, and is finished from it without a second model call. A string of
   * its own, not fields of the record: a long value would keep the record in Redis's larger hash encoding
   * for its 7 days. It is kept as long as a record is (7 days from the push).
   */
  answerNote(runId: string, answer: StagedAnswer): ValueNote {
    return stagedAnswerNote(this.answerKeyOf(runId), answer, RECORD_TTL_SECONDS);
  }

  /** The answer a run's last push staged (see `answerNote`), if no settle or finish has deleted it. */
  stagedAnswer(runId: string): Promise<StagedAnswer | undefined> {
    return readStagedAnswer(this.redis, this.answerKeyOf(runId));
  }

  /**
   * Marks a stop asked for a run in its record, where the run's start reads it (see mark-stop.lua); false
   * when there is no such run.
   */
  async markStop(runId: string, status: "aborted" | "superseded"): Promise<boolean> {
    return (await runScript(this.redis, MARK_STOP, [this.#key(runId)], [status])) === 1;
  }

  /**
   * The thread a run's message came from, when the run is in its chat's session: the dispatcher notes it in
   * the record (field `thread`) as it admits a thread message there, so that a `/stop` in that thread finds it.
   */
  async threadOf(runId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.#key(runId), "thread")) ?? undefined;
  }

  /** The stop asked for a run (its record's mark, see `markStop`), if any. */
  async stopMark(runId: string): Promise<"aborted" | "superseded" | undefined> {
    const mark = await this.redis.hget(this.#key(runId), "stop");
    return mark === "aborted" || mark === "superseded" ? mark : undefined;
  }

  /**
   * Records of every run still marked running (for restart recovery, status and metrics). A run in
   * flight is the head item of its session's lane until it has settled (the lane acks it after), so
   * these are read off the lanes' heads: no index of running runs is written per message. The few runs
   * outside any lane (see `start`) are in a set of their own.
   */
  async running(): Promise<RunRecord[]> {
    const { inLanes, outsideLanes } = await this.runningByPlace();
    return [...inLanes, ...outsideLanes];
  }

  /**
   * The running runs, split by where they are: at their session lanes' heads, or outside any lane (see
   * `start`). Members of the outside set whose record is gone or no longer running (their process died
   * between the end and the set's update, or the record expired) are dropped from it on the way.
   */
  async runningByPlace(): Promise<{ inLanes: RunRecord[]; outsideLanes: RunRecord[] }> {
    const heads = await mailboxHeads(this.redis, this.prefix, SESSION_LANE_NAME);
    const outside = await this.redis.smembers(this.#outsideLane);
    const isRunning = (r: RunRecord | undefined): r is RunRecord => r?.status === "running";
    const outsideRecords = await Promise.all(outside.map((id) => this.get(id)));
    const gone = outside.filter((_, i) => !isRunning(outsideRecords[i]));
    if (gone.length > 0) await this.redis.srem(this.#outsideLane, ...gone);
    const elsewhere = new Set(outside);
    const inLanes = await Promise.all(heads.filter((h) => !elsewhere.has(h.id)).map((h) => this.get(h.id)));
    return { inLanes: inLanes.filter(isRunning), outsideLanes: outsideRecords.filter(isRunning) };
  }

  /**
   * Records the outcome of a run whose record Redis may have lost with its data (written whole again), with
   * its `sender` where the record keeps one (`recordedSender`): without it, the client that sent the message
   * would be refused its own run's outcome when it asks again by its key without `read`.
   */
  async recordAfterDataLoss(
    runId: string,
    sessionKey: string,
    outcome: { status: TerminalStatus; error: string },
    sender = "",
  ) {
    const now = Date.now();
    const fields = ["status", outcome.status, "error", outcome.error, "endedAt", now];
    if (sender) fields.push("sender", sender);
    return (
      (await runScript(
        this.redis,
        RECORD_LOST,
        [this.#key(runId), this.#outsideLane],
        [runId, sessionKey, RECORD_TTL_SECONDS, now, ...fields],
      )) === 1
    );
  }

  /**
   * Decides a run's terminal outcome, once: returns false if it was already
   * decided (a late writer cannot reopen or change it). Deciding deletes the run's staged answer. Retries until Redis
   * has it, because nothing may announce the end of a run before this resolves.
   */
  async finish(
    runId: string,
    outcome: RunOutcome,
    /** Only decide if this attempt is still the current one (an older attempt cannot end a resumed run). */
    attempt?: number,
    /** Tokens the run used, added to its session's totals (`key`, see `SessionActivity.keysOf`) when this decides. */
    usage?: { key: string; inputTokens: number; outputTokens: number },
  ): Promise<boolean> {
    const fields = RunRecords.outcomeFields(outcome);
    // Its retries (the first answer lost) recognise the outcome as theirs by this token.
    const tokens = [usage?.inputTokens ?? 0, usage?.outputTokens ?? 0];
    const args = [runId, RECORD_TTL_SECONDS, attempt ?? "", randomUUID(), ...tokens, ...fields];
    const keys = [this.#key(runId), this.#outsideLane, this.answerKeyOf(runId)];
    if (usage) keys.push(usage.key);
    const decided = await withRetries(async () => (await runScript(this.redis, FINISH, keys, args)) === 1);
    if (decided) await this.noteFinished(runId, outcome.status);
    return decided;
  }
}
