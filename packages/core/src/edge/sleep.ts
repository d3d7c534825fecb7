/** Waits `ms`, or less when `signal` aborts (it resolves then, never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Capped exponential backoff with jitter, for reconnecting and for retrying a
 * poll: `next()` gives the wait before the next try, `reset()` after a success.
 */
export class Backoff {
  #attempt = 0;
  constructor(
    private readonly initialMs = 500,
    private readonly maxMs = 30_000,
    private readonly jitter = 0.2,
  ) {}

  /** The wait before the next try (grows ×2 up to the cap, ±jitter). */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** this.#attempt);
    this.#attempt++;
    const spread = base * this.jitter;
    return Math.round(Math.min(this.maxMs, base - spread + Math.random() * 2 * spread));
  }

  /** How many tries failed in a row. */
  get attempts(): number {
    return this.#attempt;
  }

  reset(): void {
    this.#attempt = 0;
  }
}

/**
 * Waits for `work` to settle, at most `ms`, or until `signal` aborts: true when `work` settled first.
 * The timer and the listener go as soon as one of them ends (a `sleep` raced against `work` would keep
 * both until `ms`, one listener per call left on a long-lived signal).
 */
export function waitAtMost(work: Promise<unknown>, ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const end = (settled: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(settled);
    };
    const onAbort = () => end(false);
    const timer = setTimeout(() => end(false), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
    work.then(
      () => end(true),
      () => end(true),
    );
  });
}
