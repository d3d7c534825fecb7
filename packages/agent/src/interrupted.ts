import { failpoint, type HubLogger, type RunRequest } from "@hub/core";
import type {
  HandOn,
  RunRecord,
  RunRecords,
  SessionActivity,
  SessionStore,
  SessionWriters,
  StagedAnswer,
  TranscriptEntry,
} from "@hub/sessions";
import { endWritten } from "./history.js";
import { handOnTakenSteering, stillQueued, writtenUserRuns } from "./taken-steering.js";
import { INTERRUPTED_NOTICE } from "./unanswered-notice.js";

// The text a staged answer's run record keeps (as the settle would have kept it, see StagedAnswer).
const keptText = (staged: StagedAnswer) => (staged.recordKeepsText ? { text: staged.text } : {});

/** How a run that ends without an answer is recorded: interrupted (a restart) or failed (given up on). */
export interface UnansweredEnd {
  status: "interrupted" | "failed";
  error: string;
  stopReason?: string;
}

const INTERRUPTED: UnansweredEnd = { status: "interrupted", error: INTERRUPTED_NOTICE.error };

/** What finalizing an interrupted run touches. */
export interface InterruptedRunDeps {
  runs: RunRecords;
  sessions: SessionStore;
  /** When given, messages steered into the dead run are handed on as follow-ups (to its session's lane). */
  activity?: SessionActivity | undefined;
  /** Taken over before messages the dead run took from its steering are handed on (see below). */
  writers?: SessionWriters | undefined;
  /** Deletes the live preview a run left on screen (see `ReplyDispatcher.closeLeftPreview`). */
  closeLeftPreview?: ((runId: string) => Promise<void>) | undefined;
}

/**
 * Ends a run that a crash interrupted and that is not resumed (stale, or out
 * of attempts): `interrupted` by its exact runId and attempt, with no model
 * call (its caller, the step that decided it, tells the chat: `tellUnanswered`); the transcript gets its closing line, and messages
 * steered into it (or collected into its batch) that it never wrote to its transcript run as follow-ups.
 * A run whose whole reply was queued before the crash (its last push staged the answer) ends `completed`
 * instead, its answer written before the closing line. Returns the status it ended with; undefined when something else decided
 * the run meanwhile (a newer attempt, another process's recovery).
 */
export async function finalizeInterrupted(
  deps: InterruptedRunDeps,
  record: Pick<RunRecord, "runId" | "sessionKey" | "attempt" | "startedAt">,
  log: HubLogger,
  /** The end of a run without its staged answer (default: interrupted, not resumed). */
  unanswered: UnansweredEnd = INTERRUPTED,
): Promise<"completed" | UnansweredEnd["status"] | undefined> {
  const { runId } = record;
  const staged = await deps.runs.stagedAnswer(runId);
  const outcome = staged
    ? { status: "completed" as const, stopReason: staged.stopReason, ...keptText(staged) }
    : unanswered;
  // The staged answer's tokens count as a settle's would; the finish deletes the staged answer.
  const usage =
    staged && deps.activity
      ? { key: deps.activity.keysOf(record.sessionKey, runId).usage, ...staged.usage }
      : undefined;
  const decided = await deps.runs.finish(runId, outcome, record.attempt, usage);
  // Not decided here: another finalize decided it (and hands on), or a newer attempt runs (and settles it).
  if (!decided) return undefined;
  await writeFinalEnd(deps, record, staged, outcome);
  log.warn(
    { startedAt: record.startedAt, attempt: record.attempt, status: outcome.status },
    staged
      ? "interrupted run finalized with its answer, queued whole before the interruption"
      : "interrupted run finalized without resuming",
  );
  failpoint("run.after-finalize");
  // Without its staged answer the run queued no end for its live preview: one it left would stay on screen.
  if (!staged) await deps.closeLeftPreview?.(runId);
  await handOnSteering(deps, record);
  return outcome.status;
}

// The finalized run's end in its transcript: its staged answer (if any) and its outcome, after a claim line of
// the finalize's own, the claim taken again first: an attempt that was only frozen, woken later, can then
// neither push more nor write (its claim checks fail), nor be read back writing (its late lines carry the
// older claim, and its late claim line names an older generation: see VisibleLines). Where the run no
// longer held the claim, a newer claim fences that attempt already, and the lines go in without a claim
// line (one of no generation would hide the newer writer's later lines). No SessionWriters.touch needed:
// the interrupted run claimed the session, which already made every process's kept copy of it stale.
async function writeFinalEnd(
  deps: InterruptedRunDeps,
  record: Pick<RunRecord, "runId" | "sessionKey">,
  staged: StagedAnswer | undefined,
  outcome: Omit<Extract<TranscriptEntry, { type: "outcome" }>, "type" | "runId" | "at">,
): Promise<void> {
  const { runId } = record;
  const session = await deps.sessions.get(record.sessionKey);
  const generation = await deps.writers?.reclaimFor(record.sessionKey, runId);
  const claimLine = generation
    ? [{ type: "writer" as const, runId, writer: `${runId}#${generation}`, at: Date.now() }]
    : [];
  const end = { type: "outcome" as const, runId, ...outcome, at: Date.now() };
  // Killed after its settle's write (before the settle's step): the transcript has its end already.
  const written =
    staged !== undefined &&
    session !== undefined &&
    endWritten(await deps.sessions.read(session.sessionId), runId);
  if (session && !written)
    await deps.sessions.append(session.sessionId, [...claimLine, ...(staged?.entries ?? []), end]);
}

/**
 * Hands on what a run that is over and answers nothing more leaves unanswered: the other messages of its
 * collected batch it never marked as answered, the messages it took from its steering and never answered
 * (see below), those steered in after its last take that its settle moved aside, then those it never
 * took, and ends its activity. Repeatable (a crash between a run's outcome and this step is mended when
 * the run is handed out again and found over).
 */
export async function handOnSteering(
  deps: InterruptedRunDeps,
  record: Pick<RunRecord, "runId" | "sessionKey">,
): Promise<void> {
  // Its batch first (collected before it started), then the taken ones, then those its settle moved aside:
  // they came in that order, and while the run is still active nothing new is queued ahead of them.
  const activity = deps.activity;
  if (!activity) return;
  // Read afresh each time `end` runs this (again after it lost the hand-on lease, see SessionActivity.end).
  await activity.end(record.sessionKey, record.runId, async (handOn) => {
    const batch = async () =>
      (await activity.readCollected(record.runId)).filter((r) => r.runId !== record.runId);
    await endTakenMessages(deps, handOn, record, batch, "which collected it");
    const taken = () => activity.readTaken(record.runId);
    await endTakenMessages(deps, handOn, record, taken, "into which it was steered");
    const late = await activity.readSettled(record.runId);
    for (const message of await stillQueued(deps.runs, late)) await handOn(message);
  });
}

// Messages the dead run took (from its steering, or as its collected batch: `read`) and never answered
// (see handOnTakenSteering), handed on through `handOn`; `how` says how it took them.
async function endTakenMessages(
  deps: InterruptedRunDeps,
  handOn: HandOn,
  record: Pick<RunRecord, "runId" | "sessionKey">,
  read: () => Promise<RunRequest[]>,
  how: string,
): Promise<void> {
  if ((await stillQueued(deps.runs, await read())).length === 0) return;
  // A frozen attempt of the run may still hold its writer claim: taken again here first (only if the
  // run still holds it: a live run of the session must not lose it), so that attempt's next take is
  // fenced and its write and its marks of them as answered fail their claim checks.
  await deps.writers?.reclaimFor(record.sessionKey, record.runId);
  const session = await deps.sessions.get(record.sessionKey);
  const taken = await read();
  const written = writtenUserRuns(session ? await deps.sessions.read(session.sessionId) : []);
  await handOnTakenSteering({ runs: deps.runs, requeue: handOn }, taken, written, {
    status: "interrupted",
    error: `interrupted with run ${record.runId}, ${how}; not resumed`,
  });
}
