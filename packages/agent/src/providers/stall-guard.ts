import { ModelError } from "../model.js";

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

  /** Why a failed call ended, as `abortOrStallError` reads it: the caller's abort, our stall timer, or neither. */
  get state(): { aborted: boolean; timedOut: boolean; timeoutMs: number } {
    return { aborted: this.signal?.aborted === true, timedOut: this.#timedOut, timeoutMs: this.timeoutMs };
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

/** The error of a call ended by the stall timer. */
export function stalled(providerId: string, timeoutMs: number): ModelError {
  return new ModelError("network", `${providerId}: no response from the server for ${timeoutMs} ms`);
}

/**
 * The part of error classification every provider shares: our own errors pass
 * through, and the caller's abort and our stall timer (both of which surface as
 * SDK aborts) are told apart first. Undefined means "classify the SDK error".
 */
export function abortOrStallError(
  error: unknown,
  providerId: string,
  state: { aborted: boolean; timedOut: boolean; timeoutMs: number },
): ModelError | undefined {
  if (error instanceof ModelError) return error;
  if (state.aborted) return new ModelError("aborted", `${providerId}: model call aborted`, { cause: error });
  if (state.timedOut)
    return new ModelError("network", stalled(providerId, state.timeoutMs).message, { cause: error });
  return undefined;
}
