import type { RunRequest } from "@hub/core";
import type { TranscriptEntry } from "@hub/sessions";

/** One line of a session's history as `chat.history` shows it to a client. */
export interface HistoryMessage {
  role: "user" | "assistant" | "status";
  text: string;
  runId: string | undefined;
  at: number;
}

/**
 * What a client sees of a transcript: the users' messages (not group context),
 * the assistant's answers, and a status line for every run that did not
 * complete, then the messages accepted and not written yet (`waiting`: queued
 * behind a running run, whose answers come later); the last `limit` of them.
 */
export function projectHistory(
  entries: TranscriptEntry[],
  limit: number,
  waiting: readonly RunRequest[] = [],
): HistoryMessage[] {
  const written = new Set(entries.flatMap((e) => (e.type === "user" ? [e.runId] : [])));
  const queued = waiting.flatMap((r): HistoryMessage[] =>
    written.has(r.runId) || r.contextOnly
      ? []
      : [{ role: "user", text: r.ctx.body, runId: r.runId, at: r.ctx.timestamp }],
  );
  return entries
    .flatMap((e): HistoryMessage[] => {
      if (e.type === "user" && !e.contextOnly)
        return [{ role: "user", text: e.text, runId: e.runId, at: e.at }];
      if (e.type === "assistant" && e.text)
        return [{ role: "assistant", text: e.text, runId: e.runId, at: e.at }];
      if (e.type === "outcome" && e.status !== "completed")
        return [
          {
            role: "status",
            text: `Run ${e.status}${e.error ? `: ${e.error}` : ""}`,
            runId: e.runId,
            at: e.at,
          },
        ];
      return [];
    })
    .concat(queued)
    .slice(-limit);
}
