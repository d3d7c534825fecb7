import { createHash } from "node:crypto";
import type { ChatType } from "./msg-context.js";

/**
 * How direct-message sessions are shared: `main` (all DMs of the agent are one
 * session), `per-peer` (one per person across channels), `per-channel-peer`
 * (one per person per channel).
 */
export type DmScope = "main" | "per-peer" | "per-channel-peer";

/** What a session key is derived from. */
export interface SessionKeyParts {
  agentId: string;
  channel: string;
  chatType: ChatType;
  chatId: string;
  threadId?: string | undefined;
  /** The DM peer (for direct chats); identity links may map several ids to one. */
  peerId: string;
  dmScope: DmScope;
}

// Key parts are joined with ':'; escape it so an id cannot forge another key.
const part = (value: string) => value.replace(/%/g, "%25").replace(/:/g, "%3A");

/**
 * Derives the routing key of a conversation:
 * `agent:<agentId>:<channel>:<chatType>:<chatId>[:thread:<threadId>]` for groups and channels;
 * direct chats follow `dmScope`.
 */
export function deriveSessionKey(p: SessionKeyParts): string {
  const agent = `agent:${part(p.agentId)}`;
  if (p.chatType === "direct") {
    if (p.dmScope === "main") return `${agent}:main`;
    if (p.dmScope === "per-peer") return `${agent}:direct:${part(p.peerId)}`;
    return `${agent}:${part(p.channel)}:direct:${part(p.peerId)}`;
  }
  const base = `${agent}:${part(p.channel)}:${p.chatType}:${part(p.chatId)}`;
  return p.threadId ? `${base}:thread:${part(p.threadId)}` : base;
}

/** The identity of one reply target (chat + thread): the unit of ordered delivery. */
export function replyTargetKey(t: {
  channel: string;
  accountId: string;
  chatId: string;
  threadId?: string | undefined;
}): string {
  const base = `${part(t.channel)}:${part(t.accountId)}:${part(t.chatId)}`;
  return t.threadId ? `${base}:${part(t.threadId)}` : base;
}

/**
 * The runId of a platform message, derived from its dedupe key: every
 * redelivery of one message gets the same runId, so everything keyed by it
 * (run record, reply, lane item) is idempotent across crashes and retries.
 * It is a version-8 UUID (RFC 9562, "custom"), a shape the gateway refuses as
 * an idempotency key: a client could otherwise take a future message's runId
 * first and have that message dropped as a duplicate.
 */
export function runIdForMessage(dedupeKey: string): string {
  const h = createHash("sha256").update(dedupeKey).digest("hex");
  const variant = ((Number.parseInt(h.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Who sent a run's message as its run record keeps it, `<channel>:<senderId>` (`webchat:client:<name>`
 * for a gateway client), so that a repeated `chat.send` is told the recorded answer only by its sender.
 */
export function runSender(ctx: { channel: string; sender: { id: string } }): string {
  return `${ctx.channel}:${ctx.sender.id}`;
}

/**
 * The sender a run record keeps: only where a client chose the runId (its idempotency key, the only way a
 * run is asked for again); '' for a platform message's run, so the records of most runs grow by nothing.
 */
export function recordedSender(runId: string, ctx: { channel: string; sender: { id: string } }): string {
  return isMessageRunId(runId) ? "" : runSender(ctx);
}

const MESSAGE_RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** Whether `id` has the shape of a platform message's runId (`runIdForMessage`), in any letter case. */
export function isMessageRunId(id: string): boolean {
  return MESSAGE_RUN_ID.test(id);
}
