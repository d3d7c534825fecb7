import { describeError, InboundRejectedError, type InboundResult } from "@hub/core";
import type { DispatchResult } from "./dispatcher.js";

/** What an admission outcome means to the adapter that delivered the message. */
export function inboundResultOf(result: DispatchResult): InboundResult {
  switch (result.status) {
    case "accepted":
    case "command":
    case "context":
      return { kind: "accepted", runId: result.runId };
    case "duplicate":
      return { kind: "duplicate" };
    case "dropped":
      return { kind: "ignored", reason: result.reason };
    case "pairing":
      return { kind: "ignored", reason: "unknown sender: pairing requested" };
    case "rate_limited":
      return {
        kind: "ignored",
        reason: "too many messages in a short time (rate limited); wait a minute, then send it again",
      };
  }
}

/**
 * Admits one message and answers what the adapter must do with it: input that
 * can never be accepted (`InboundRejectedError`) is `rejected`; any other
 * failure (Redis unreachable, being admitted by another worker) is `retry`.
 */
export async function admitInbound(admit: () => Promise<DispatchResult>): Promise<InboundResult> {
  try {
    return inboundResultOf(await admit());
  } catch (error) {
    if (error instanceof InboundRejectedError) return { kind: "rejected", reason: error.message };
    return { kind: "retry", reason: describeError(error) };
  }
}
