import { readFile } from "node:fs/promises";
import type { OutboundAttachment } from "@hub/core";
import { renderWhatsApp } from "./render.js";

/** What the adapter asks baileys to send: text, an image, or a document (baileys `AnyMessageContent` shapes). */
export type WhatsAppContent =
  | { text: string }
  | { image: Buffer; caption?: string; mimetype: string }
  | { document: Buffer; fileName: string; caption?: string; mimetype: string };

/**
 * The media message of a file segment: an `image` message for an image
 * WhatsApp shows inline, a `document` message with its file name otherwise,
 * the segment's text as the rendered caption. baileys uploads the bytes
 * (encrypted) to WhatsApp's media servers, then sends the message. WhatsApp
 * has no idempotency key: a resend after a crash between its answer and our
 * checkpoint posts the file again (the same window as text).
 */
export async function mediaContent(file: OutboundAttachment, caption: string): Promise<WhatsAppContent> {
  const data = await readFile(file.path);
  const text = caption.trim() ? { caption: renderWhatsApp(caption) } : {};
  if (file.kind === "image") return { image: data, mimetype: file.mime, ...text };
  return { document: data, fileName: file.filename, mimetype: file.mime, ...text };
}
