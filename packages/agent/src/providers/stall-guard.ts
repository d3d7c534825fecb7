/**
 * One model call's abort plumbing, shared by the providers: a controller that
 * follows the caller's signal, and a stall timer that aborts when the stream
 * is silent for `timeoutMs` (SDK timeouts cover only the wait for headers).
 */
export class StallGuard {
  readonly controller = new AbortController();
  #timedOut = false;
  #timer: NodeJS.Timeout | undefined;
  readonly #onAbort = (): void => this.controller.abort();

  constructor(
    private readonly signal: AbortSignal | undefined,
    private readonly timeoutMs: number,
  ) {
    signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  /** True when the call was ended by the stall timer. */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  /** (Re)starts the stall timer: call before the request and after every chunk. */
  arm(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.controller.abort();
    }, this.timeoutMs);
  }

  disarm(): void {
    clearTimeout(this.#timer);
  }

  /** Ends the call's plumbing; also releases the connection if the consumer stopped early. */
  dispose(): void {
    this.disarm();
    this.signal?.removeEventListener("abort", this.#onAbort);
    this.controller.abort();
  }
}
