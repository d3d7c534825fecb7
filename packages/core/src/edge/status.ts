import type { ChannelState, ChannelStatus } from "../plugin.js";

/**
 * Holds one channel account's connection state for `ChannelAdapter.status()`;
 * `onChange` hears every change of state or reason (e.g. to log it once).
 */
export class ChannelStatusCell {
  #status: ChannelStatus = { state: "stopped", since: Date.now() };

  constructor(private readonly onChange?: (status: ChannelStatus, previous: ChannelStatus) => void) {}

  get(): ChannelStatus {
    return { ...this.#status };
  }

  /** Moves to `state`; a repeat of the same state and reason only refreshes `nextRetryAt`. */
  set(state: ChannelState, details: { reason?: string; nextRetryAt?: number; standby?: boolean } = {}): void {
    const previous = this.#status;
    const same = previous.state === state && previous.reason === details.reason;
    const failing = state === "reconnecting" || state === "failed" || state === "logged_out";
    const lastError =
      failing && details.reason !== undefined
        ? same && previous.lastError
          ? previous.lastError
          : { reason: details.reason, at: Date.now() }
        : previous.lastError;
    this.#status = {
      state,
      since: same ? previous.since : Date.now(),
      ...(details.reason !== undefined ? { reason: details.reason } : {}),
      ...(details.nextRetryAt !== undefined ? { nextRetryAt: details.nextRetryAt } : {}),
      ...(details.standby ? { standby: true as const } : {}),
      ...(lastError ? { lastError } : {}),
    };
    if (!same) this.onChange?.(this.get(), previous);
  }
}
