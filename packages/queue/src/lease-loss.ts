/**
 * Whether a drainer lost its lease, told to whoever asks: a flag, listeners called once, and an
 * AbortSignal made only when one is read. Node 20 makes each AbortSignal slowly (an EventTarget, about
 * 6 µs with a listener added and removed) and every one survives a scavenge; a drain makes one lease per
 * key it claims, and most handlers only need to hear of a loss, which plain listeners tell them.
 */
export class LeaseLoss {
  #lost = false;
  #reason: unknown;
  #listeners: Array<(reason: unknown) => void> | undefined;
  #controller: AbortController | undefined;

  /** True once the lease is lost. */
  get lost(): boolean {
    return this.#lost;
  }

  /** Aborted (with the loss's reason) when the lease is lost; made on first read. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#lost) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /**
   * Calls `listener` once when the lease is lost (at once, before returning, if it is already); returns
   * what stops the listening.
   */
  onLost(listener: (reason: unknown) => void): () => void {
    if (this.#lost) {
      listener(this.#reason);
      return () => {};
    }
    this.#listeners ??= [];
    this.#listeners.push(listener);
    return () => {
      const at = this.#listeners?.indexOf(listener) ?? -1;
      if (at >= 0) this.#listeners?.splice(at, 1);
    };
  }

  /** Marks the lease lost; only the first call counts. */
  lose(reason: unknown): void {
    if (this.#lost) return;
    this.#lost = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const listeners = this.#listeners ?? [];
    this.#listeners = undefined;
    for (const listener of listeners) {
      try {
        listener(reason);
      } catch (error) {
        // As an EventTarget reports a listener's throw: the others are still told, and the error is
        // not the caller's (`assertLease` throws its own).
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }
}
