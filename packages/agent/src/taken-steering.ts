import type { RunRequest } from "@hub/core";
import type { RunRecords, TerminalStatus, TranscriptEntry } from "@hub/sessions";

/** What handing on a run's taken steering touches. */
export interface TakenSteeringDeps {
  runs: RunRecords;
  /** Queues one follow-up in the session's lane, recorded as handed on (`SessionActivity`'s `HandOn`). */
  requeue: (request: RunRequest) => Promise<void>;
}

/**
 * After a run ended without answering `taken`, the messages it took from its steering (it was finalized after a
 * crash, or its turn failed between a take and the write): each one still "queued" that its transcript
 * has (`written`: the user lines' runIds) was part of the ended turn and ends with it (`outcome`); one it
 * never wrote is followed up as a run of its own, in order. A second hand-on finds the follow-up's record
 * begun or over and does nothing.
 */
export async function handOnTakenSteering(
  deps: TakenSteeringDeps,
  taken: RunRequest[],
  written: ReadonlySet<string>,
  outcome: { status: TerminalStatus; error: string },
): Promise<void> {
  for (const message of await stillQueued(deps.runs, taken)) {
    if (!written.has(message.runId)) await deps.requeue(message);
    else await deps.runs.finish(message.runId, outcome);
  }
}

/** The requests whose record is still "queued": no run answered, ended or began them yet. */
export async function stillQueued(runs: RunRecords, requests: RunRequest[]): Promise<RunRequest[]> {
  const queued: RunRequest[] = [];
  for (const request of requests)
    if ((await runs.get(request.runId))?.status === "queued") queued.push(request);
  return queued;
}

/** The runIds of the user lines in transcript entries. */
export function writtenUserRuns(entries: readonly TranscriptEntry[]): Set<string> {
  const written = new Set<string>();
  for (const e of entries) if (e.type === "user" && e.runId !== undefined) written.add(e.runId);
  return written;
}
