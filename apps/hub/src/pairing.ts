import { randomUUID } from "node:crypto";
import type { ReplySink, ReplyTarget } from "@hub/core";
import type { PairingStore, PendingPairing } from "@hub/dispatch";

/** The message a newly approved sender gets. */
export const APPROVED_MESSAGE = "You are approved: from now on I answer your direct messages here.";

/** Sends one short hub message to a target through ordered delivery. */
export async function sendNotice(replies: ReplySink, target: ReplyTarget, text: string): Promise<void> {
  const reply = replies.open(`notice-${randomUUID()}`, target);
  await reply.push(text);
  await reply.end();
}

/** Approves a pairing code and tells the sender; undefined when the code is not pending. */
export async function approvePairing(
  pairing: PairingStore,
  replies: ReplySink,
  channel: string,
  code: string,
): Promise<PendingPairing | undefined> {
  const approved = await pairing.approve(channel, code);
  if (approved) await sendNotice(replies, approved.replyTarget as ReplyTarget, APPROVED_MESSAGE);
  return approved;
}
