import type { HubLogger, RunRequest } from "@hub/core";
import {
  finalizeInterrupted,
  handOnSteering,
  type InterruptedRunDeps,
  type UnansweredEnd,
} from "./interrupted.js";
import { failureNotice } from "./run-outcome.js";
import { tellUnanswered, type UnansweredNotice, type UnansweredNoticeDeps } from "./unanswered-notice.js";

/** What ending a run its session lane gave up on touches. */
export interface GivenUpDeps extends InterruptedRunDeps, UnansweredNoticeDeps {}

const GIVEN_UP: UnansweredEnd = {
  status: "failed",
  error: "the run could not be executed (its runner failed repeatedly); see the hub's log",
  stopReason: "internal_error",
};

const GIVEN_UP_NOTICE: UnansweredNotice = {
  kind: "failed",
  text: failureNotice(undefined, "failed"),
  error: GIVEN_UP.error,
};

/**
 * Ends a run its session lane gave up on (handed out as often as the lane allows: runners that died, froze
 * past their lease or failed each time). It is `failed`, ended as a finalize ends a run (the writer claim
 * taken first, so an attempt frozen meanwhile that wakes later can neither push nor write; a preview it
 * left deleted; what was steered into it handed on), and the user is told in the chat: a gateway event
 * alone reaches only the web chat. A run whose whole reply was queued ends `completed` instead, untold.
 */
export async function endGivenUpRun(deps: GivenUpDeps, request: RunRequest, log: HubLogger): Promise<void> {
  const { runId } = request;
  const record = await deps.runs.get(runId);
  const status =
    record?.status === "running"
      ? await finalizeInterrupted(deps, record, log, GIVEN_UP)
      : await finishUnstarted(deps, request);
  if (status !== "failed") return;
  log.error(
    { error: GIVEN_UP.error },
    request.contextOnly ? "context-only message given up" : "run given up: the user is told it failed",
  );
  await tellUnanswered(deps, request, GIVEN_UP_NOTICE, log);
}

// A run given up on before any attempt started it (or without a record): failed, what was steered into it
// handed on.
async function finishUnstarted(deps: GivenUpDeps, request: RunRequest): Promise<"failed" | undefined> {
  const decided = await deps.runs.finish(request.runId, GIVEN_UP);
  await handOnSteering(deps, { runId: request.runId, sessionKey: request.ctx.sessionKey });
  return decided ? "failed" : undefined;
}
