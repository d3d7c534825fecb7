import { LightAbort } from "@hub/core";

/**
 * The run ends this process has still to announce. A run's end (its `final` event) is published once its
 * reply settles, after the run itself is over; a process that stops then must not close Redis under those
 * waits (a web chat client never heard the end of its run). At the stop they get a grace to settle, and the
 * ones still waiting then are announced at once.
 */
export class PendingAnnouncements {
  readonly #pending = new Set<Promise<unknown>>();
  // Not an AbortSignal: every reply whose end is announced adds and removes a listener on this one stop
  // (hundreds wait at once on a busy hub), which costs an EventTarget 1-3 µs each time (see LightAbort).
  readonly #stopWaiting = new LightAbort();

  /** Aborted once the process stops waiting for replies to settle: the ends are announced now. */
  get stopWaiting(): LightAbort {
    return this.#stopWaiting;
  }

  /** Keeps `announcement` until it is done (it never rejects here: a failure is the announcer's to log). */
  track(announcement: Promise<unknown>): void {
    this.#pending.add(announcement);
    const done = () => this.#pending.delete(announcement);
    announcement.then(done, done);
  }

  /** How many announcements still wait. */
  get size(): number {
    return this.#pending.size;
  }

  /** Stops every wait for a reply now and from now on: the ends are announced at once. */
  announceNow(): void {
    this.#stopWaiting.abort();
  }

  /** Resolves once every announcement is done; past `graceMs` those still waiting for their replies announce now. */
  async drain(graceMs: number): Promise<void> {
    if (this.#pending.size === 0) return;
    const timer = setTimeout(() => this.announceNow(), graceMs);
    try {
      while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
    } finally {
      clearTimeout(timer);
    }
  }
}
