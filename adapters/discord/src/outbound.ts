import { type OutboundSegment, type ReplyTarget, segmentIdentityDigest } from "@hub/core";

/** Discord accepts a nonce of at most 25 characters. */
export const NONCE_LENGTH = 25;

/**
 * The nonce of a segment: a hash of its identity (reply + position), so a resend
 * of the same segment (after a crash, a timeout, a retry) carries the same nonce
 * and, with `enforce_nonce`, Discord returns the message it already made.
 */
export function nonceOf(segment: Pick<OutboundSegment, "replyId" | "index">): string {
  return segmentIdentityDigest(segment).toString("base64url").slice(0, NONCE_LENGTH);
}

/** No mention in the agent's text pings anyone (`@everyone`, `@here`, roles, users); a reply pings its author. */
export const NO_PINGS = { parse: [] as string[], replied_user: true } as const;

/** The JSON body of `POST /channels/{id}/messages` for one segment. */
export function messageBody(segment: OutboundSegment, target: ReplyTarget): Record<string, unknown> {
  const replyTo = segment.index === 0 ? target.replyToMessageId : undefined;
  return {
    content: segment.text,
    nonce: nonceOf(segment),
    enforce_nonce: true,
    allowed_mentions: replyTo ? NO_PINGS : { parse: [] },
    ...(replyTo ? { message_reference: { message_id: replyTo, fail_if_not_exists: false } } : {}),
  };
}

/** The channel a segment is posted in: the thread when there is one, else the chat. */
export function channelOf(target: ReplyTarget): string {
  return target.threadId ?? target.chatId;
}

/**
 * A segment's size for chunking: its length, or, past `maxLines` lines, a size
 * over `textLimit` in proportion to its lines, so the reply layer splits it
 * further until every message has at most `maxLines` lines.
 */
export function measureWithLines(textLimit: number, maxLines: number): (markdown: string) => number {
  return (markdown) => {
    const lines = markdown.split("\n").length;
    if (lines <= maxLines) return markdown.length;
    return Math.max(markdown.length, Math.ceil((textLimit * lines) / maxLines) + 1);
  };
}

/** Marks a reply target's `replyToMessageId` as an interaction to answer, not a message to reply to. */
export const INTERACTION_PREFIX = "interaction:";
