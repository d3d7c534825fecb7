import type { ChannelReport } from "../supervisor.js";

/**
 * One channel account as `hub status` and `hub channels status` print it: its
 * state and why, or, once it is connected again, its last error and how long ago.
 */
export function channelLine(c: ChannelReport, now = Date.now()): string {
  const { state, reason, lastError } = c.status;
  const why = reason
    ? ` (${reason})`
    : lastError
      ? ` (last error ${ago(now - lastError.at)} ago: ${lastError.reason})`
      : "";
  return `${c.channel}/${c.accountId}: ${state}${why}`;
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}
