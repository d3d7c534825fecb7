import type { HubLogger, RunRequest } from "@hub/core";
import { withQuotedReply } from "../context/untrusted.js";
import type { ModelImage } from "../model.js";
import { type MediaPreparer, withMediaNotes } from "./prepare.js";

/** A turn's user text with its attachments, and what the user is told about refused ones. */
export interface TurnMedia {
  userText: string;
  images: ModelImage[];
  notices: string[];
  /** Nothing to answer but refusals (no text, every attachment refused): the notices are the answer. */
  onlyRefusals: boolean;
}

/**
 * The user's side of a turn: each message's text (with the message it
 * replies to, someone else's words, marked untrusted) followed by its attachments as the preparer made them, or by
 * short notes when this process has no preparer.
 */
export async function mediaForTurn(
  preparer: MediaPreparer | undefined,
  batch: RunRequest[],
  signal: AbortSignal,
  log: HubLogger,
): Promise<TurnMedia> {
  const hasMedia = batch.some((r) => r.ctx.media.length > 0);
  if (!preparer || !hasMedia) {
    const userText = batch
      .map((r) => withQuotedReply({ ...r.ctx, body: withMediaNotes(r.ctx) }))
      .join("\n\n");
    return { userText, images: [], notices: [], onlyRefusals: false };
  }
  const prepared = await preparer.prepare(
    batch.map((r) => r.ctx),
    signal,
    log,
  );
  const userText = batch
    .map((r, i) => [withQuotedReply(r.ctx), prepared.texts[i] ?? ""].filter((t) => t !== "").join("\n\n"))
    .join("\n\n");
  const silent = batch.every((r) => r.ctx.body.trim() === "");
  return {
    userText,
    images: prepared.images,
    notices: prepared.notices,
    onlyRefusals: silent && prepared.count > 0 && prepared.refused === prepared.count,
  };
}
