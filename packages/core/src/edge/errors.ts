import { chatRefusesStatus, MAX_RETRY_AFTER_MS, PermanentSendError, RateLimitedError } from "../channel.js";
import { HubError } from "../errors.js";

/**
 * The platform refused this account for good (a bad or revoked token, a
 * missing permission): retrying cannot help, so the channel is `failed` until
 * the operator fixes what the message says. Any other error thrown by
 * `ChannelAdapter.start` is treated as transient and retried with backoff.
 */
export class ChannelRefusedError extends HubError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "ChannelRefusedError";
  }
}

/**
 * The adapter was stopped while `ChannelAdapter.start` was still connecting: the
 * start gives up at once (a platform that never answers must not hold the
 * hub's shutdown); the supervisor, which stopped it, does not retry.
 */
export class ChannelStoppedError extends HubError {
  constructor() {
    super("channel_stopped", "the channel was stopped while it was connecting");
    this.name = "ChannelStoppedError";
  }
}

/** Settles like `connecting`, or rejects with `ChannelStoppedError` as soon as `stopped` aborts. */
export function untilStopped<T>(connecting: Promise<T>, stopped: AbortSignal): Promise<T> {
  if (stopped.aborted) return Promise.reject(new ChannelStoppedError());
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new ChannelStoppedError());
    stopped.addEventListener("abort", onAbort, { once: true });
  });
  return Promise.race([connecting, aborted]).finally(() => stopped.removeEventListener("abort", onAbort));
}

/** A one-line description of an error for logs: the message (and its code), never a stack. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    const text =
      typeof code === "string" && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
    return `${text}${cause}`;
  }
  return String(error);
}

/**
 * Milliseconds to wait from a platform's retry-after value: a number of
 * seconds (Telegram `retry_after`, Discord `retry_after`), a numeric string
 * (HTTP `Retry-After: 5`), or an HTTP date. `fallbackMs` when absent or unreadable; at most
 * MAX_RETRY_AFTER_MS.
 */
export function retryAfterMs(value: unknown, fallbackMs = 1000, now = Date.now()): number {
  return Math.min(toleratedMs(value, now) ?? fallbackMs, MAX_RETRY_AFTER_MS);
}

function toleratedMs(value: unknown, now: number): number | undefined {
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return Math.ceil(value * 1000);
  if (typeof value !== "string" || value.trim() === "") return undefined;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Whether an HTTP status from a platform means "this request will never
 * succeed as sent" (bad request, unauthorized, forbidden, not found, gone,
 * too large): the segment or the start attempt fails for good. 408 and 429
 * are not permanent (wait and retry); every 5xx is transient.
 */
export function isPermanentStatus(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}

/**
 * Turns a failed platform send into what the delivery layer acts on:
 * `RateLimitedError` (wait `retryAfter`), `PermanentSendError` (give the
 * segment up), or the original error (retried).
 */
export function classifySendFailure(
  failure: {
    status: number;
    retryAfter?: unknown;
    description: string;
    platform?: string;
    /** The refusal is of every message to the chat, whatever its status says (see `chatRefuses`). */
    chatRefuses?: boolean;
  },
  cause?: unknown,
): Error {
  if (failure.status === 429) return new RateLimitedError(retryAfterMs(failure.retryAfter));
  if (isPermanentStatus(failure.status))
    return new PermanentSendError(
      `${failure.platform ?? "the platform"} refused the message: ${failure.description}`,
      { cause, chatRefuses: failure.chatRefuses === true || chatRefusesStatus(failure.status) },
    );
  return cause instanceof Error
    ? cause
    : new Error(`the platform answered ${failure.status}: ${failure.description}`);
}
