import { access } from "node:fs/promises";
import {
  attachmentFallbackText,
  type ChannelAdapter,
  type HubLogger,
  type OutboundSegment,
  type Outbox,
  type OutboxFile,
} from "@hub/core";

/** Longest caption sent with a file (Telegram allows 1024); a longer one goes first as its own text. */
export const MAX_CAPTION_CHARS = 1000;

/** A queued segment as the delivery worker reads it. */
export interface QueuedSegment {
  replyId: string;
  /** Its run, where that is not `replyId`. */
  runId?: string | undefined;
  index: number;
  text: string;
  attachment?: OutboxFile | undefined;
}

/**
 * The segment an adapter is given for a queued one: a file's outbox reference
 * becomes the path its bytes are read from. A channel that cannot send files,
 * or a file no longer in this process's outbox (swept, or written on another
 * machine that shares no outbox), gets a clear text note in the file's place.
 */
export async function segmentToSend(
  item: QueuedSegment,
  adapter: ChannelAdapter,
  outbox: Outbox | undefined,
  logger: HubLogger,
): Promise<OutboundSegment> {
  const { index, text, attachment } = item;
  // The run is named only where it differs from the reply (a resumed attempt's `<runId>.<attempt>`).
  const replyId = item.runId ? { replyId: item.replyId, runId: item.runId } : { replyId: item.replyId };
  if (!attachment) return { ...replyId, index, text };
  if (!adapter.capabilities.files)
    return { ...replyId, index, text: attachmentFallbackText(attachment, text) };
  const path = outbox ? await existing(outbox.pathOf(attachment.ref)) : undefined;
  if (!path) {
    logger.warn(
      { replyId: item.replyId, index, channel: adapter.channel, ref: attachment.ref },
      "outbox file not found in this delivery process (swept, or the outbox directory is not shared); sending a note instead",
    );
    return {
      ...replyId,
      index,
      text: attachmentFallbackText(attachment, text, "the file is no longer available"),
    };
  }
  const { filename, mime, kind, size } = attachment;
  return { ...replyId, index, text, attachment: { path, filename, mime, kind, size } };
}

async function existing(path: string): Promise<string | undefined> {
  try {
    await access(path);
    return path;
  } catch {
    return undefined;
  }
}
