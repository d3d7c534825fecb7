import type { RunRequest } from "@hub/core";
import type { TokenBucket } from "./rate-limit.js";

/** How a request entered its session, or that its message had been admitted before. */
export type AdmissionOutcome =
  | "duplicate"
  | "rate_limited"
  | "queued"
  | "steered"
  | "collected"
  | "interrupted";

/**
 * The session layer's atomic admission step, as admission sees it: the dedupe
 * mark, the run record and the session's queue-mode decision (queue, steer,
 * collect, interrupt) are written in one step, or nothing is. A known
 * message is a `duplicate` before any token is taken; then one token is taken
 * from each bucket in order (none left: `rate_limited`, nothing written).
 * Implemented over Redis by `SessionAdmission` in `@hub/sessions`.
 */
export type AdmitToSession = (
  request: RunRequest,
  dedupe: { key: string; ttlSeconds: number },
  buckets: TokenBucket[],
) => Promise<AdmissionOutcome>;
