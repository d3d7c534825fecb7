/**
 * A stop that a wait listens for: an AbortSignal has these members, and so has `LightAbort`, which a
 * wait that only has to be told should take instead.
 */
export interface StopSignal {
  /** True once stopped. */
  readonly aborted: boolean;
  /** Why it stopped (undefined until then). */
  readonly reason: unknown;
  /** Calls `listener` once when stopped (never when added after). */
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  /** Stops calling `listener`. */
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * An abort told by a flag and plain listeners, with an AbortSignal made only when one is read (for an
 * API that takes nothing else). Node 20 makes each AbortSignal slowly (an EventTarget: about 6 µs with
 * a listener added and removed), and the hub made several per message for waits that are almost never
 * aborted.
 */
export class LightAbort implements StopSignal {
  #aborted = false;
  #reason: unknown;
  // A set: one stop may have hundreds of waits listening (every reply whose end is announced), each
  // removing itself when done.
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

  /** Stops calling `listener` (during an abort too, as an AbortSignal does, if it was not called yet). */
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
    // Walked in place: a listener removed by an earlier one is skipped (a Set's iteration does), as an
    // AbortSignal skips it; none is added now (see addEventListener).
    const listeners = this.#listeners ?? new Set();
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
    this.#listeners = undefined;
  }
}
