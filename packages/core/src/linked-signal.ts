/** A signal linked to others (see `linkedSignal`), and what unlinks it. */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Unlinks it from its parents and clears its timer (it is never aborted after this). */
  release(): void;
}

/**
 * A signal aborted when any of `parents` is (with its reason), or after `timeoutMs` (a TimeoutError),
 * whichever comes first. Unlike `AbortSignal.any`, the parents and the timer hold it strongly: Node 20
 * collects a signal `AbortSignal.any` made that nothing else holds (a fetch's body still streaming does
 * not), and its timeout then never fires (nodejs/node#55428). Release it when done, or it stays linked
 * as long as its parents live.
 */
export function linkedSignal(parents: ReadonlyArray<AbortSignal>, timeoutMs?: number): LinkedSignal {
  const controller = new AbortController();
  const unlinks: Array<() => void> = [];
  for (const parent of parents) {
    if (parent.aborted) {
      controller.abort(parent.reason);
      break;
    }
    const follow = () => controller.abort(parent.reason);
    parent.addEventListener("abort", follow, { once: true });
    unlinks.push(() => parent.removeEventListener("abort", follow));
  }
  const timer =
    timeoutMs === undefined || controller.signal.aborted
      ? undefined
      : setTimeout(
          () => controller.abort(new DOMException("The operation timed out.", "TimeoutError")),
          timeoutMs,
        );
  return {
    signal: controller.signal,
    release: () => {
      clearTimeout(timer);
      for (const unlink of unlinks) unlink();
    },
  };
}
