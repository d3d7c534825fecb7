import type { HubLogger, RunRequest } from "@hub/core";
import {
  type RunRecords,
  recoveryDecision,
  type SessionActivity,
  type SessionLane,
  type SessionStore,
  type SessionWriters,
} from "@hub/sessions";
import { finalizeInterrupted } from "./interrupted.js";

/** How long a run outside any session lane may stay running before recovery ends it as interrupted. */
const OUTSIDE_LANE_STALE_MS = 60_000;

/**
 * Restart recovery, once at start with one frozen scan time: every run still
 * marked running whose session has no live runner is either finalized as
 * `interrupted` by its exact runId (stale, or out of attempts; no model call;
 * its chat is told, from the request its lane still holds) or left to be
 * resumed once when its session lane wakes it.
 * A fresh run of the same session is never touched: decisions are per runId
 * and per attempt.
 */
export async function recoverInterruptedRuns(deps: {
  runs: RunRecords;
  sessions: SessionStore;
  lane: SessionLane;
  /** When given, messages steered into a finalized run are queued as follow-ups. */
  activity?: SessionActivity;
  /** Taken over by a finalize that hands on messages its run took from its steering. */
  writers?: SessionWriters;
  /** Deletes the live preview a finalized run left on screen. */
  closeLeftPreview?: (runId: string) => Promise<void>;
  /** Tells the chat of a finalized run of a session lane that it was not answered (see `tellUnanswered`). */
  tell?: (request: RunRequest, log: HubLogger) => Promise<void>;
  runTimeoutMs: number;
  logger: HubLogger;
  scanTime?: number;
}): Promise<{ finalized: string[]; resumable: string[] }> {
  const scanTime = deps.scanTime ?? Date.now();
  const finalized: string[] = [];
  const resumable: string[] = [];
  const { inLanes, outsideLanes } = await deps.runs.runningByPlace();
  const outside = new Set(outsideLanes.map((r) => r.runId));
  for (const record of [...inLanes, ...outsideLanes]) {
    const log = deps.logger.child({ runId: record.runId, sessionKey: record.sessionKey });
    if (outside.has(record.runId)) {
      // No lane resumes it (a command's answer, an absorbed message: each takes milliseconds), so one
      // still running a minute after its start was left by a dead process: it is ended then, here.
      const finalize = async () => {
        if (await finalizeInterrupted(deps, record, log)) finalized.push(record.runId);
      };
      const dueInMs = record.startedAt + OUTSIDE_LANE_STALE_MS - scanTime;
      if (dueInMs <= 0) await finalize();
      else setTimeout(() => void finalize().catch(() => {}), dueInMs).unref();
      continue;
    }
    if (await deps.lane.isBusy(record.sessionKey)) continue;
    if (recoveryDecision(record, scanTime, deps.runTimeoutMs) === "finalize") {
      // Read first: once it is finalized, another process's lane may hand the request out and ack it.
      const request = await requestInLane(deps, record, log);
      const status = await finalizeInterrupted(deps, record, log);
      if (status) finalized.push(record.runId);
      if (status === "interrupted" && request && deps.tell)
        await deps.tell(request, log).catch((error: unknown) => {
          log.warn({ err: error }, "could not tell the chat that its interrupted message was not answered");
        });
    } else {
      resumable.push(record.runId);
      log.info({ attempt: record.attempt }, "interrupted run will be resumed by its session lane");
    }
  }
  return { finalized, resumable };
}

// The request of a run about to be finalized, at its lane's head (the lane hands it out later, and the runner
// finds it over): its chat is told from it. Undefined when no one is to be told, or it cannot be read (logged).
async function requestInLane(
  deps: { lane: SessionLane; tell?: (request: RunRequest, log: HubLogger) => Promise<void> },
  record: { runId: string; sessionKey: string },
  log: HubLogger,
): Promise<RunRequest | undefined> {
  if (!deps.tell) return undefined;
  try {
    const request = await deps.lane.headRequest(record.sessionKey);
    return request?.runId === record.runId ? request : undefined;
  } catch (error) {
    log.warn({ err: error }, "could not read an interrupted run's request; its chat is not told");
    return undefined;
  }
}
