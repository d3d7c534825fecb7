import type { QueueMode, RunRequest } from "@hub/core";

/** What admission needs to know and do about a session (implemented over the session layer by the hub). */
export interface SessionAdmissionPort {
  /** Durably queues a request in the session's lane. */
  enqueue(request: RunRequest): Promise<void>;
  activeRun(sessionKey: string): Promise<string | undefined>;
  queueMode(sessionKey: string): Promise<QueueMode>;
  /** Queues a message for the running run; false if it ended meanwhile. */
  steer(sessionKey: string, runId: string, request: RunRequest): Promise<boolean>;
  /** Adds to the collected batch; true when the batch needs its run queued. */
  collect(sessionKey: string, request: RunRequest): Promise<boolean>;
  /** Aborts a running run (wherever it runs). */
  abortRun(runId: string): Promise<void>;
}

/** How a request entered its session. */
export type AdmissionOutcome = "queued" | "steered" | "collected" | "interrupted";

/**
 * Applies the session's queue mode to a message that may arrive while the
 * session is running: steer it into the run, queue it as a follow-up, collect
 * it into one follow-up turn, or interrupt the run. With no run active, the
 * message simply queues.
 */
export async function admitToSession(
  request: RunRequest,
  port: SessionAdmissionPort,
): Promise<AdmissionOutcome> {
  const sessionKey = request.ctx.sessionKey;
  if (request.contextOnly || request.command) {
    await port.enqueue(request);
    return "queued";
  }
  const active = await port.activeRun(sessionKey);
  if (!active || active === request.runId) {
    await port.enqueue(request);
    return "queued";
  }
  switch (await port.queueMode(sessionKey)) {
    case "steer":
      if (await port.steer(sessionKey, active, request)) return "steered";
      await port.enqueue(request);
      return "queued";
    case "followup":
      await port.enqueue(request);
      return "queued";
    case "collect":
      // The first collected message queues the one run that will answer the whole batch.
      if (await port.collect(sessionKey, request))
        await port.enqueue({ runId: request.runId, ctx: request.ctx, collect: true });
      return "collected";
    case "interrupt":
      await port.abortRun(active);
      await port.enqueue(request);
      return "interrupted";
  }
}
