import { LightAbort } from "@hub/core";

/**
 * Whether a drainer lost its lease, told to whoever asks: a flag, listeners called once, and an
 * AbortSignal made only when one is read (see `LightAbort`): a drain makes one lease per key it claims,
 * and most handlers only need to hear of a loss, which plain listeners tell them.
 */
export class LeaseLoss extends LightAbort {
  /** True once the lease is lost. */
  get lost(): boolean {
    return this.aborted;
  }

  /**
   * Calls `listener` once when the lease is lost (at once, before returning, if it is already); returns
   * what stops the listening.
   */
  onLost(listener: (reason: unknown) => void): () => void {
    return this.onAbort(listener);
  }

  /** Marks the lease lost; only the first call counts. */
  lose(reason: Error): void {
    this.abort(reason);
  }
}
