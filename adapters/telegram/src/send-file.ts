import type { OutboundAttachment } from "@hub/core";
import { type Api, InputFile } from "grammy";
import { isHtmlParseError } from "./errors.js";
import { grammySignal } from "./grammy-signal.js";
import { plainTextFallback, renderTelegramHtml } from "./render.js";

/** Largest photo `sendPhoto` takes; a bigger image goes as a document. */
const MAX_PHOTO_BYTES = 10 * 1024 * 1024;

/** Chat, thread and reply parameters shared by every send to one target. */
type CommonParams = { message_thread_id?: number; reply_parameters?: { message_id: number } };

/**
 * Sends a file segment: `sendPhoto` for an image Telegram shows inline,
 * `sendDocument` otherwise, uploaded as multipart (grammY `InputFile` streams
 * it from the outbox path), the segment's text as an HTML caption (resent as
 * plain text if Telegram cannot parse it). Telegram has no idempotency key:
 * a resend after a crash between Telegram's answer and our checkpoint posts
 * the file again (the same window as text).
 */
export async function sendTelegramFile(
  api: Api,
  chatId: number | string,
  caption: string,
  file: OutboundAttachment,
  common: CommonParams,
  signal: AbortSignal | undefined,
): Promise<{ message_id: number }> {
  const asPhoto = file.kind === "image" && file.size <= MAX_PHOTO_BYTES;
  const send = (extra: { caption?: string; parse_mode?: "HTML" }) => {
    // A new InputFile per attempt: its stream is consumed by the first.
    const input = new InputFile(file.path, file.filename);
    const s = grammySignal(signal);
    return asPhoto
      ? api.sendPhoto(chatId, input, { ...common, ...extra }, s)
      : api.sendDocument(chatId, input, { ...common, ...extra }, s);
  };
  if (!caption.trim()) return send({});
  try {
    return await send({ caption: renderTelegramHtml(caption), parse_mode: "HTML" });
  } catch (error) {
    if (!isHtmlParseError(error)) throw error;
    return send({ caption: plainTextFallback(caption) });
  }
}
