/**
 * A stop that a wait listens for: an AbortSignal has these members, and so has `LightAbort`, which a
 * wait that only has to be told should take instead.
 */
export interface StopSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * An abort told by a flag and plain listeners, with an AbortSignal made only when one is read (for an
 * API that takes nothing else). Node 20 makes each AbortSignal slowly (an EventTarget: about 6 µs with
 * a listener added and removed) and every one lives past a scavenge; the hub makes several per message
 * for waits that are almost never aborted.
 */
export class LightAbort implements StopSignal {
  #aborted = false;
  #reason: unknown;
  // A set: one stop may have hundreds of waits listening (every reply in delivery), each removing itself
  // when done.
  #listeners: Set<() => void> | undefined;
  #controller: AbortController | undefined;

  /** True once aborted. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** Why it was aborted (undefined until then). */
  get reason(): unknown {
    return this.#reason;
  }

  /** How many listeners wait for the abort. */
  get listening(): number {
    return this.#listeners?.size ?? 0;
  }

  /** Aborted (with the same reason) when this is; made on first read. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /**
   * As an AbortSignal's: `listener` is called once, when aborted (not if it already was); a listener
   * added twice is called once.
   */
  addEventListener(_type: "abort", listener: () => void): void {
    if (this.#aborted) return;
    this.#listeners ??= new Set();
    this.#listeners.add(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    this.#listeners?.delete(listener);
  }

  /**
   * Calls `listener` once when aborted (at once, before returning, if it is already); returns what
   * stops the listening.
   */
  onAbort(listener: (reason: unknown) => void): () => void {
    if (this.#aborted) {
      listener(this.#reason);
      return () => {};
    }
    const call = () => listener(this.#reason);
    this.addEventListener("abort", call);
    return () => this.removeEventListener("abort", call);
  }

  /** Aborts with `reason` (an AbortError when none is given); only the first call counts. */
  abort(reason: unknown = new DOMException("This operation was aborted", "AbortError")): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const listeners = this.#listeners ?? new Set();
    this.#listeners = undefined;
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        // As an EventTarget reports a listener's throw: the others are still told, and the error is
        // not the caller's.
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }
}
