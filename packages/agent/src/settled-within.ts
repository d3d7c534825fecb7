import { LightAbort, type ReplySettlement, type ReplyStream, type StopSignal } from "@hub/core";

/**
 * The reply's settlement, or undefined once `ms` passed first (or `stop` was aborted: the process stops):
 * delivery retries with backoff can take long, and a run or command is not held by it forever. Past the
 * time the wait is given up, so the reply's status is no longer read. Rejects when reading the settlement
 * failed (Redis down).
 */
export async function settledWithin(
  reply: ReplyStream,
  ms: number,
  stop?: StopSignal,
): Promise<ReplySettlement | undefined> {
  if (stop?.aborted) return undefined;
  let timer: NodeJS.Timeout | undefined;
  let onStop: (() => void) | undefined;
  // Not an AbortController: one per reply, almost never aborted (see LightAbort).
  const giveUp = new LightAbort();
  const givenUp = new Promise<undefined>((resolve) => {
    const end = () => {
      resolve(undefined);
      // Only a wait still running is given up: aborting builds an error with a stack, which on every
      // reply was a percent of the hub's CPU for nothing.
      giveUp.abort();
    };
    timer = setTimeout(end, ms);
    onStop = end;
    stop?.addEventListener("abort", end, { once: true });
  });
  const settled = reply.settled(giveUp);
  settled.catch(() => {}); // rejects once given up, after the race is decided
  try {
    return await Promise.race([settled, givenUp]);
  } finally {
    clearTimeout(timer);
    if (onStop) stop?.removeEventListener("abort", onStop);
  }
}
