import type { ChatEvent } from "@hub/core";
import { WriteFencedError } from "@hub/core";
import { type TerminalStatus, WriterSupersededError } from "@hub/sessions";
import { ModelError } from "./model.js";
import { LeaseLostError, RunStopError } from "./run-errors.js";
import type { AgentTurnResult } from "./turn.js";

/** How a run ended, as it is recorded: status, why it stopped, and the error if any. */
export interface RunEnd {
  status: TerminalStatus;
  stopReason: string;
  errorText?: string | undefined;
  /** This process lost the session to another, which resumes the run: nothing is decided here. */
  abandoned: boolean;
}

const TURN_STOP_REASONS: Record<AgentTurnResult["stopReason"], string> = {
  stop: "natural_end",
  tool_calls: "natural_end",
  tool_loop: "tool_loop_guard",
  policy_stop: "policy_stop",
  length: "length",
  content_filter: "content_filter",
};

/**
 * Whether a run's record keeps its answer's text: only where a client can ask for it again (the web chat's
 * chat.send retried with its idempotency key); elsewhere the transcript has it, and a long value would keep
 * the record in Redis' larger hash encoding for the record's 7 days.
 */
export const recordKeepsText = (channel: string): boolean => channel === "webchat";

/** A turn that ran to its end. */
export function completedRun(stopReason: AgentTurnResult["stopReason"]): RunEnd {
  return { status: "completed", stopReason: TURN_STOP_REASONS[stopReason], abandoned: false };
}

/**
 * A run that threw: superseded (a newer claim, a fenced write, a supersede
 * stop), stopped (the user, its timeout), abandoned (lane lease lost) or failed.
 * `reason` is the abort reason when the run's signal was aborted.
 */
export function interruptedRun(error: unknown, aborted: boolean, reason: unknown): RunEnd {
  const cause = aborted ? reason : error;
  const superseded =
    error instanceof WriterSupersededError ||
    error instanceof WriteFencedError ||
    (cause instanceof RunStopError && cause.status === "superseded");
  const status: TerminalStatus = superseded
    ? "superseded"
    : cause instanceof RunStopError
      ? cause.status
      : aborted
        ? "aborted"
        : "failed";
  const stopReason =
    status === "superseded"
      ? "superseded"
      : status === "aborted"
        ? "user_abort"
        : status === "timed_out"
          ? "timeout"
          : error instanceof ModelError
            ? "provider_error"
            : "internal_error";
  const errorText = error instanceof Error ? error.message : String(error);
  return { status, stopReason, errorText, abandoned: cause instanceof LeaseLostError };
}

/** The terminal chat event's state for a run's status. */
export function terminalState(status: TerminalStatus): ChatEvent["state"] {
  if (status === "completed") return "final";
  return status === "aborted" || status === "superseded" ? "aborted" : "error";
}

/** What the user is told when a run fails or times out. */
export function failureNotice(error: unknown, status: TerminalStatus): string {
  if (status === "timed_out") return "Sorry, I could not answer: the run took too long and was stopped.";
  if (error instanceof ModelError) {
    const why: Record<string, string> = {
      auth: "the model provider refused our credentials (check the API key in hub.json5)",
      rate_limit: "the model provider is rate limiting us; try again in a minute",
      overloaded: "the model provider is overloaded; try again shortly",
      context_overflow: "the conversation is too long for the model; send /new to start over",
      network: "the model provider could not be reached",
    };
    return `Sorry, I could not answer: ${why[error.kind] ?? "the model call failed"}.`;
  }
  return "Sorry, I could not answer because of an internal error. The operator can find details in the hub's log.";
}
