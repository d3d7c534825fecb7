import type { RunRequest } from "@hub/core";

/** How a request entered its session, or that its message had been admitted before. */
export type AdmissionOutcome = "duplicate" | "queued" | "steered" | "collected" | "interrupted";

/**
 * The session layer's atomic admission step, as admission sees it: the dedupe
 * mark, the run record and the session's queue-mode decision (queue, steer,
 * collect, interrupt) are written in one step, or nothing is. Implemented
 * over Redis by `SessionAdmission` in `@hub/sessions`.
 */
export type AdmitToSession = (
  request: RunRequest,
  dedupe: { key: string; ttlSeconds: number },
) => Promise<AdmissionOutcome>;
