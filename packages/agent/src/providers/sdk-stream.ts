import { ModelError, type ModelEvent } from "../model.js";
import { type SdkErrors, sdkModelError } from "./sdk-error.js";
import { StallGuard, stalled } from "./stall-guard.js";

/** One streamed call of an official model SDK, as `sdkStream` drives it. */
export interface SdkCall<E> {
  providerId: string;
  timeoutMs: number;
  /** The caller's signal (a stop, a timeout of the run). */
  signal: AbortSignal | undefined;
  sdk: SdkErrors;
  /** Starts the SDK's stream, aborted through `signal` (the caller's, or the stall timer). */
  open(signal: AbortSignal): Promise<AsyncIterable<E>>;
  /** What one SDK event gives (text deltas, images), the rest kept for `end`. */
  take(event: E): Iterable<ModelEvent>;
  /** What the whole stream gives once it ended cleanly (tool calls, `done`); throws when it is incomplete. */
  end(): Iterable<ModelEvent>;
}

/**
 * A model call's events, every failure a classified ModelError: the caller's abort, a stream silent for
 * `timeoutMs` (the SDKs' own timeouts cover only the wait for headers), the SDK's errors. Time our
 * consumer spends on a yielded event does not count as the server's stall.
 */
export async function* sdkStream<E>(call: SdkCall<E>): AsyncIterable<ModelEvent> {
  const { providerId, signal } = call;
  if (signal?.aborted) throw new ModelError("aborted", `${providerId}: model call aborted`);
  const guard = new StallGuard(signal, call.timeoutMs);
  try {
    guard.arm();
    const stream = await call.open(guard.controller.signal);
    for await (const event of stream) {
      guard.disarm();
      yield* call.take(event);
      guard.arm();
    }
    guard.disarm();
    // The SDKs end the iteration silently when aborted mid-stream, so check why it ended.
    if (signal?.aborted) throw new ModelError("aborted", `${providerId}: model call aborted`);
    if (guard.timedOut) throw stalled(providerId, call.timeoutMs);
    yield* call.end();
  } catch (error) {
    throw sdkModelError(error, providerId, guard.state, call.sdk);
  } finally {
    guard.dispose();
  }
}
