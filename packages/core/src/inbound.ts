import { HubError } from "./errors.js";
import { KeyedChain } from "./keyed-chain.js";
import type { AdapterFields } from "./msg-context.js";
import type { InboundResult } from "./plugin.js";

/**
 * An inbound message that can never be accepted (malformed, too large, empty):
 * the adapter acknowledges it to the platform and drops it with one log line.
 * Anything else thrown during admission is transient and makes the platform retry.
 */
export class InboundRejectedError extends HubError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "InboundRejectedError";
  }
}

/** Session commands the hub answers itself, before the agent, in every channel (`/stop`, `/new`, ...). */
export const HUB_COMMANDS = ["stop", "new", "status", "queue", "approve", "deny"] as const;

// Commands that must act while the chat's earlier messages are still being admitted.
const URGENT_COMMAND = /^\/stop(@\w+)?(\s|$)/i;

/** Whether a message is an urgent command (`/stop`) that skips its chat's inbound queue. */
export function isUrgentCommand(body: string): boolean {
  return URGENT_COMMAND.test(body.trim());
}

/**
 * Keeps inbound messages of one chat (and thread) in order while admitting
 * different chats in parallel; an urgent command (`/stop`) is never queued
 * behind its chat's other messages. Adapters submit in platform order; the
 * decision of what is urgent is the core's, not each adapter's.
 */
export class InboundSequencer {
  readonly #chats = new KeyedChain();

  /**
   * Runs `handle(fields)` after the earlier messages of the same chat/thread (urgent ones at once, unless
   * `inLine`: an urgent command the hub could not take at once, or a replayed one, waits for the messages
   * before it, or it would be admitted ahead of what it means to stop).
   */
  submit(
    fields: AdapterFields,
    handle: (fields: AdapterFields) => Promise<InboundResult>,
    options: { inLine?: boolean } = {},
  ): Promise<InboundResult> {
    if (!options.inLine && isUrgentCommand(fields.body)) return handle(fields);
    const key = `${fields.accountId ?? "default"}\u0000${fields.chat.id}\u0000${fields.threadId ?? ""}`;
    return this.#chats.run(key, () => handle(fields));
  }
}

/** What the platform must be told about an inbound result: acknowledge it, or make it redeliver. */
export function mustRedeliver(result: InboundResult): boolean {
  return result.kind === "retry";
}
