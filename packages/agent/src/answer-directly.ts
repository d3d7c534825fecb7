import { type HubLogger, type ReplySink, type RunRequest, recordedSender } from "@hub/core";
import type { RunRecords } from "@hub/sessions";
import type { ChatEventPublisher } from "./events.js";
import type { PendingAnnouncements } from "./pending-announcements.js";
import { settledWithin } from "./settled-within.js";

/** What a direct answer needs. */
export interface DirectAnswerDeps {
  runs: RunRecords;
  replies: ReplySink;
  events: ChatEventPublisher;
  runTimeoutMs: number;
  logger: HubLogger;
  /** Where an answer's end waiting for delivery is kept, so that a stopping process announces it. */
  announcements?: PendingAnnouncements;
}

/**
 * Answers a request with a fixed text (session commands) through the same
 * path as a run: run record, ordered reply, outcome before the final event.
 * Idempotent by runId: a request answered before is not answered again.
 */
export async function answerDirectly(
  o: DirectAnswerDeps,
  request: RunRequest,
  text: string,
  /** Resolve once the answer is queued, not delivered (admission never waits for delivery). */
  options: { detachSettlement?: boolean } = {},
): Promise<void> {
  const { runId, ctx } = request;
  // A command answered at admission is no lane's head: recovery finds it among the runs outside the lanes
  // (`/new`, answered in its lane, is in both; its finish clears the mark either way).
  const started = await o.runs.start(runId, ctx.sessionKey, o.runTimeoutMs, ctx.channel, {
    outsideLane: true,
    sender: recordedSender(runId, ctx),
  });
  if (started === 0) return;
  const reply = o.replies.open(runId, ctx.replyTarget, { runId, sessionKey: ctx.sessionKey });
  await reply.push(text, undefined, { last: true });
  await o.runs.finish(runId, { status: "completed", text });
  const segments = await reply.end();
  const announce = async () => {
    // As a run's end: announced once delivered, or anyway past the run timeout.
    if (!(await settledWithin(reply, o.runTimeoutMs, o.announcements?.stopWaiting)))
      o.logger.warn(
        { runId, sessionKey: ctx.sessionKey },
        o.announcements?.stopWaiting.aborted
          ? "the hub stops before the command's answer settled; announcing it now"
          : "command answer not settled within the run timeout",
      );
    await o.events.publish({ runId, sessionKey: ctx.sessionKey, seq: segments, state: "final", text });
  };
  if (!options.detachSettlement) return announce();
  const announcement = announce().catch((error) =>
    o.logger.warn({ err: error, runId, sessionKey: ctx.sessionKey }, "could not announce a command's answer"),
  );
  o.announcements?.track(announcement);
}
