/** The reply of a run's attempt: the run's id for its first, `<runId>.<attempt>` after. */
export function replyIdOf(runId: string, attempt: number): string {
  return attempt > 1 ? `${runId}.${attempt}` : runId;
}
