import type { HubLogger, RunRequest } from "@hub/core";
import type { RunRecord, RunRecords, SessionActivity, SessionStore } from "@hub/sessions";

/** What finalizing an interrupted run touches. */
export interface InterruptedRunDeps {
  runs: RunRecords;
  sessions: SessionStore;
  /** When given, messages steered into the dead run are handed on as follow-ups. */
  activity?: SessionActivity | undefined;
  requeue: (request: RunRequest) => Promise<void>;
}

/**
 * Ends a run that a crash interrupted and that is not resumed (stale, or out
 * of attempts): `interrupted` by its exact runId and attempt, with no model
 * call and no message; the transcript gets its closing line, and messages
 * steered into it that it never wrote to its transcript run as follow-ups. Returns false when something else decided
 * the run meanwhile (a newer attempt, another process's recovery).
 */
export async function finalizeInterrupted(
  deps: InterruptedRunDeps,
  record: Pick<RunRecord, "runId" | "sessionKey" | "attempt" | "startedAt">,
  log: HubLogger,
): Promise<boolean> {
  const decided = await deps.runs.finish(
    record.runId,
    { status: "interrupted", error: "interrupted by a restart; not resumed" },
    record.attempt,
  );
  if (decided) {
    // No SessionWriters.touch needed: the interrupted run claimed the session, which already made every
    // process's kept copy of it stale (see HeldSessions).
    const session = await deps.sessions.get(record.sessionKey);
    if (session)
      await deps.sessions.append(session.sessionId, [
        { type: "outcome", runId: record.runId, status: "interrupted", at: Date.now() },
      ]);
    log.warn(
      { startedAt: record.startedAt, attempt: record.attempt },
      "interrupted run finalized without resuming",
    );
  }
  await handOnTaken(deps, record);
  await deps.activity?.end(record.sessionKey, record.runId, deps.requeue);
  return decided;
}

/**
 * The messages the run took from its steering and never marked as answered by it. One its transcript
 * has (the dead attempt wrote it into its turn) is part of the interrupted turn and ends with it, as
 * `interrupted`; one it never wrote is followed up, before the messages it never took (it came first,
 * and while the run is still active nothing new is queued ahead of it). A second hand-on finds the
 * follow-up's record begun or over and does nothing.
 */
async function handOnTaken(
  deps: InterruptedRunDeps,
  record: Pick<RunRecord, "runId" | "sessionKey">,
): Promise<void> {
  const taken = (await deps.activity?.readTaken(record.runId)) ?? [];
  if (taken.length === 0) return;
  const session = await deps.sessions.get(record.sessionKey);
  const written = new Set<string | undefined>();
  for (const e of session ? await deps.sessions.read(session.sessionId) : [])
    if (e.type === "user") written.add(e.runId);
  for (const message of taken) {
    if ((await deps.runs.get(message.runId))?.status !== "queued") continue;
    if (!written.has(message.runId)) await deps.requeue(message);
    else
      await deps.runs.finish(message.runId, {
        status: "interrupted",
        error: `interrupted with run ${record.runId}, into which it was steered; not resumed`,
      });
  }
}
