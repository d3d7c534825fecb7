import type { HubLogger, ReplySink, RunRequest } from "@hub/core";
import type { ChatEventPublisher } from "./events.js";

/** What telling a chat that its message ended without an answer touches. */
export interface UnansweredNoticeDeps {
  replies: ReplySink;
  events: ChatEventPublisher;
  /** Takes off the acknowledgement reaction no attempt lived to take off (once the notice is delivered). */
  unacknowledge?: ((request: RunRequest, log: HubLogger) => Promise<void>) | undefined;
}

/** One kind of unanswered end, as the chat and the web chat's watchers are told it. */
export interface UnansweredNotice {
  /** The notice's reply id after the run's (`<runId>.<kind>`): one notice per run and kind. */
  kind: string;
  /** What the user reads in the chat. */
  text: string;
  /** What the run's chat event says (the web chat's watchers). */
  error: string;
}

/** A run interrupted by restarts that is not resumed (stale, or out of attempts): its user is told. */
export const INTERRUPTED_NOTICE: UnansweredNotice = {
  kind: "interrupted",
  text: "Sorry, I could not finish answering this: I was restarted while working on it. Please send it again.",
  error: "interrupted by a restart; not resumed",
};

/**
 * Tells the chat that a run ended without an answer, and publishes that end to the web chat's watchers (a
 * gateway event alone reaches only the web chat). Called by the step that decided the run's end, and again
 * by whatever finds the run over later (its next hand-out, after a crash right after the end): the notice
 * is queued once per run and kind whatever repeats it, and a repeat does nothing. A message kept only as
 * context was never to be answered: nothing is said.
 */
export async function tellUnanswered(
  deps: UnansweredNoticeDeps,
  request: RunRequest,
  notice: UnansweredNotice,
  log: HubLogger,
): Promise<void> {
  const { runId, ctx } = request;
  if (!request.contextOnly) {
    const reply = deps.replies.open(`${runId}.${notice.kind}`, ctx.replyTarget, {
      runId,
      sessionKey: ctx.sessionKey,
      once: true,
    });
    await reply.push(notice.text, undefined, { last: true });
    await reply.end();
    if (reply.repeated) return;
    // As a run's own end does: the reaction comes off once its notice is out (in the background).
    const unacknowledge = deps.unacknowledge;
    if (unacknowledge)
      void reply
        .settled()
        .then(() => unacknowledge(request, log))
        .catch((error: unknown) =>
          log.warn({ err: error }, "could not take off the unanswered run's reaction"),
        );
  }
  await deps.events.publish({
    runId,
    sessionKey: ctx.sessionKey,
    seq: 0,
    state: "error",
    text: notice.error,
  });
}
