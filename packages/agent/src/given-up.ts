import type { HubLogger, ReplySink, RunRequest } from "@hub/core";
import type { ChatEventPublisher } from "./events.js";
import {
  finalizeInterrupted,
  handOnSteering,
  type InterruptedRunDeps,
  type UnansweredEnd,
} from "./interrupted.js";
import { failureNotice } from "./run-outcome.js";

/** What ending a run its session lane gave up on touches. */
export interface GivenUpDeps extends InterruptedRunDeps {
  replies: ReplySink;
  events: ChatEventPublisher;
  /** Takes off the acknowledgement reaction no attempt lived to take off (once the notice is delivered). */
  unacknowledge?: ((request: RunRequest, log: HubLogger) => Promise<void>) | undefined;
}

const GIVEN_UP: UnansweredEnd = {
  status: "failed",
  error: "the run could not be executed (its runner failed repeatedly); see the hub's log",
  stopReason: "internal_error",
};

/**
 * Ends a run its session lane gave up on (handed out as often as the lane allows: runners that died, froze
 * past their lease or failed each time). It is `failed`, ended as a finalize ends a run (the writer claim
 * taken first, so an attempt frozen meanwhile that wakes later can neither push nor write; a preview it
 * left deleted; what was steered into it handed on), and the user is told in the chat: a gateway event
 * alone reaches only the web chat. A run whose whole reply was queued ends `completed` instead, untold.
 */
export async function endGivenUpRun(deps: GivenUpDeps, request: RunRequest, log: HubLogger): Promise<void> {
  const { runId, ctx } = request;
  const record = await deps.runs.get(runId);
  const status =
    record?.status === "running"
      ? await finalizeInterrupted(deps, record, log, GIVEN_UP)
      : await finishUnstarted(deps, request);
  if (status !== "failed") return;
  await deps.events.publish({
    runId,
    sessionKey: ctx.sessionKey,
    seq: 0,
    state: "error",
    text: GIVEN_UP.error,
  });
  // A message only kept as context (an unmentioned group message) was never to be answered: nothing to tell.
  if (request.contextOnly) return log.error({ error: GIVEN_UP.error }, "context-only message given up");
  log.error({ error: GIVEN_UP.error }, "run given up: the user is told it failed");
  const text = failureNotice(undefined, "failed");
  const reply = deps.replies.open(`${runId}.failed`, ctx.replyTarget, { runId, sessionKey: ctx.sessionKey });
  await reply.push(text, undefined, { last: true });
  await reply.end();
  // As a run's own end does: the reaction comes off once its notice is out (in the background: the lane goes on).
  const unacknowledge = deps.unacknowledge;
  if (unacknowledge)
    void reply
      .settled()
      .then(() => unacknowledge(request, log))
      .catch((error: unknown) => log.warn({ err: error }, "could not take off the given-up run's reaction"));
}

// A run given up on before any attempt started it (or without a record): failed, what was steered into it
// handed on.
async function finishUnstarted(deps: GivenUpDeps, request: RunRequest): Promise<"failed" | undefined> {
  const decided = await deps.runs.finish(request.runId, GIVEN_UP);
  await handOnSteering(deps, { runId: request.runId, sessionKey: request.ctx.sessionKey });
  return decided ? "failed" : undefined;
}
