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
 * steered into it (and those it took but never answered) run as follow-ups. Returns false when something else decided
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
  // Messages it took from its steering and never marked as answered by it are followed up first (they
  // came before those it never took, and while it is still active nothing new is queued ahead of them; a
  // second hand-on finds the follow-up's record begun or over and does nothing).
  for (const taken of (await deps.activity?.readTaken(record.runId)) ?? [])
    if ((await deps.runs.get(taken.runId))?.status === "queued") await deps.requeue(taken);
  await deps.activity?.end(record.sessionKey, record.runId, deps.requeue);
  return decided;
}
