import { ModelError } from "../model.js";
import { abortOrStallError } from "./stall-guard.js";

/**
 * What an official model SDK (openai, @anthropic-ai/sdk: the same error classes, by name) throws, as
 * `sdkModelError` reads it: its abort and connection error classes, and the ModelError of one of its
 * API errors (undefined for anything else).
 */
export interface SdkErrors {
  UserAbort: abstract new (...args: never[]) => Error;
  Connection: abstract new (...args: never[]) => Error;
  apiError(error: unknown, providerId: string): ModelError | undefined;
}

/** Classifies anything thrown during an SDK's model call into a ModelError. */
export function sdkModelError(
  error: unknown,
  providerId: string,
  state: { aborted: boolean; timedOut: boolean; timeoutMs: number },
  sdk: SdkErrors,
): ModelError {
  const early = abortOrStallError(error, providerId, state);
  if (early) return early;
  const detail = error instanceof Error ? error.message : String(error);
  // Both are API errors too: told apart first.
  if (error instanceof sdk.UserAbort) {
    return new ModelError("aborted", `${providerId}: model call aborted`, { cause: error });
  }
  // Includes the connection timeout.
  if (error instanceof sdk.Connection) {
    return new ModelError("network", `${providerId}: ${detail}`, { cause: error });
  }
  const api = sdk.apiError(error, providerId);
  if (api) return api;
  if (error instanceof SyntaxError) {
    return new ModelError("unknown", `${providerId}: malformed response stream: ${detail}`, { cause: error });
  }
  // fetch (undici) reports resets and cut bodies as TypeError ("fetch failed", "terminated").
  if (error instanceof TypeError) {
    return new ModelError("network", `${providerId}: ${detail}`, { cause: error });
  }
  return new ModelError("unknown", `${providerId}: ${detail}`, { cause: error });
}
