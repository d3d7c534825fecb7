import { createHash } from "node:crypto";
import type { OutboundSegment } from "../channel.js";

/**
 * The SHA-256 digest of a segment's identity (its reply and position): the same for every send of the
 * same segment (after a crash, a timeout, a retry), so an adapter whose platform takes an idempotency
 * key (Discord's nonce, a WhatsApp message id) can derive one from it in the platform's shape.
 */
export function segmentIdentityDigest(segment: Pick<OutboundSegment, "replyId" | "index">): Buffer {
  return createHash("sha256").update(`${segment.replyId}\u0000${segment.index}`).digest();
}
