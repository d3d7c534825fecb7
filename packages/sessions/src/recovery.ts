import type { RunRecord } from "./run-records.js";

/** Most attempts a run gets (the first plus resumes) before it is finalized instead. */
export const MAX_RUN_ATTEMPTS = 3;

/** How old an interrupted run may be and still be resumed: max(2 h, run timeout + 60 s). */
export function livenessThresholdMs(runTimeoutMs: number): number {
  return Math.max(2 * 3600_000, runTimeoutMs + 60_000);
}

/**
 * What to do with a run found still "running" after its process died, judged
 * at one frozen `scanTime`: `finalize` it as interrupted (stale, or out of
 * attempts) by its exact runId without a model call, or `resume` it once.
 */
export function recoveryDecision(
  record: Pick<RunRecord, "startedAt" | "attempt" | "timeoutMs">,
  scanTime: number,
  defaultTimeoutMs: number,
): "finalize" | "resume" {
  const age = scanTime - record.startedAt;
  if (age > livenessThresholdMs(record.timeoutMs ?? defaultTimeoutMs)) return "finalize";
  return record.attempt >= MAX_RUN_ATTEMPTS ? "finalize" : "resume";
}
