/**
 * Runs work of one key strictly one after another, in the order it was handed in, and work of different
 * keys side by side (an inbound chat's steps: its messages must reach the next stage in arrival order).
 * A failed piece of work does not stop the ones behind it.
 */
export class KeyedChain {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `work` after everything handed in earlier under `key`; resolves or rejects as it does. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const run = previous.then(work);
    const tail = run.catch(() => undefined);
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return run;
  }

  /** Resolves once the work handed in so far has ended, whichever way. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.#tails.values()]);
  }
}
