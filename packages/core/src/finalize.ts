import { formatIssues } from "./errors.js";
import { InboundRejectedError } from "./inbound.js";
import { type AdapterFields, AdapterFieldsSchema, type MsgContext } from "./msg-context.js";
import { isBlankText, neutralizeRoleMarkers, normalizeText } from "./sanitize.js";
import { type DmScope, deriveSessionKey } from "./session-key.js";

/** The part of the hub config that finalizing reads. `HubConfig` satisfies it. */
export interface FinalizeConfig {
  agent: {
    id: string;
    dmScope: DmScope;
    /** One person's ids on several channels ("telegram:123") mapped to one peer name. */
    identityLinks?: Record<string, string[]>;
  };
}

/** The peer a sender is: their linked identity if `identityLinks` names them, else their channel id. */
export function resolvePeer(
  channel: string,
  senderId: string,
  links: Record<string, string[]> | undefined,
): string {
  for (const [peer, ids] of Object.entries(links ?? {}))
    if (ids.includes(`${channel}:${senderId}`)) return peer;
  return senderId;
}

/** Longest inbound text accepted, in characters. */
export const MAX_INBOUND_TEXT = 32_000;

/**
 * Turns an adapter's raw fields into the one canonical `MsgContext`: validates,
 * normalizes line endings, neutralizes spoofed role markers, and derives the
 * sessionKey, replyTarget and dedupeKey. Pure; throws an `InboundRejectedError`
 * (`inbound_invalid`) with a clear reason for what it cannot finalize.
 */
export function finalizeInboundContext(fields: AdapterFields, config: FinalizeConfig): MsgContext {
  const parsed = AdapterFieldsSchema.safeParse(fields);
  if (!parsed.success) {
    throw new InboundRejectedError(
      "inbound_invalid",
      `Inbound message rejected: ${formatIssues(parsed.error.issues)}.`,
    );
  }
  const f = parsed.data;
  const body = checkedBody(f);
  const sessionKey =
    f.sessionKey ??
    deriveSessionKey({
      agentId: config.agent.id,
      channel: f.channel,
      chatType: f.chat.type,
      chatId: f.chat.id,
      threadId: f.threadId,
      peerId: resolvePeer(f.channel, f.sender.id, config.agent.identityLinks),
      dmScope: config.agent.dmScope,
    });
  // Built field by field from the validated input (`MsgContextSchema` is the contract with every later
  // stage, and finalize.test.ts checks that what is built here satisfies it): parsing it again would
  // only copy it.
  return {
    channel: f.channel,
    accountId: f.accountId,
    messageId: f.messageId,
    chat: f.chat,
    ...(f.threadId ? { threadId: f.threadId } : {}),
    sender: f.sender,
    body,
    wasMentioned: f.wasMentioned,
    ...(f.ownThread ? { ownThread: true } : {}),
    ...(f.replyTo
      ? {
          replyTo: {
            ...f.replyTo,
            ...(f.replyTo.body ? { body: neutralizeRoleMarkers(normalizeText(f.replyTo.body)) } : {}),
          },
        }
      : {}),
    media: f.media,
    timestamp: f.timestamp,
    sessionKey,
    replyTarget: {
      channel: f.channel,
      accountId: f.accountId,
      chatId: f.chat.id,
      ...(f.threadId ? { threadId: f.threadId } : {}),
      ...(f.replyToMessageId ? { replyToMessageId: f.replyToMessageId } : {}),
    },
    dedupeKey: `${f.channel}:${f.accountId}:${f.chat.id}:${f.messageId}`,
    commandAuthorized: f.commandAuthorized,
    floodExempt: f.floodExempt,
  };
}

/** How many characters (Unicode code points) a text has: an emoji written as a surrogate pair is one. */
export function characterCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

// The body as the model sees it, or the reason it is refused: too long, or empty with no attachment.
function checkedBody(f: { body: string; media: ReadonlyArray<unknown> }): string {
  // The limit is on what the sender wrote: neutralizing role markers lengthens some lines afterwards.
  const text = normalizeText(f.body);
  // Characters as the sender typed them (an emoji is one), not UTF-16 units; never more than the units.
  const length = text.length > MAX_INBOUND_TEXT ? characterCount(text) : text.length;
  if (length > MAX_INBOUND_TEXT) {
    throw new InboundRejectedError(
      "inbound_too_large",
      `Inbound message rejected: the text is ${length} characters; the limit is ${MAX_INBOUND_TEXT}.`,
    );
  }
  const body = neutralizeRoleMarkers(text);
  if (isBlankText(body) && f.media.length === 0) {
    throw new InboundRejectedError(
      "inbound_empty",
      "Inbound message rejected: it has neither text nor attachments.",
    );
  }
  return body;
}
