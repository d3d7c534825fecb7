import { readFile } from "node:fs/promises";
import { attachmentFallbackText, type OutboundSegment, type ReplyTarget } from "@hub/core";
import type { RawFile } from "discord.js";
import { messageBody } from "./outbound.js";

/** Largest upload a bot may send to any channel (servers with boosts allow more; 10 MiB is always allowed). */
export const DISCORD_MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

/**
 * The request of a file segment: the message body as for text (same nonce
 * with `enforce_nonce`, so a resend after a crash returns the message already
 * made instead of posting the file twice) plus `attachments` naming the one
 * upload, which discord.js sends as multipart `files[0]` with the body in
 * `payload_json`. A file over the upload limit becomes a text note.
 */
export async function fileMessageRequest(
  segment: OutboundSegment,
  target: ReplyTarget,
): Promise<{ body: Record<string, unknown>; files?: RawFile[] }> {
  const file = segment.attachment;
  if (!file) return { body: messageBody(segment, target) };
  if (file.size > DISCORD_MAX_UPLOAD_BYTES) {
    const text = attachmentFallbackText(file, segment.text, "it is larger than Discord's 10 MB upload limit");
    return { body: messageBody({ ...segment, text }, target) };
  }
  const data = await readFile(file.path);
  return {
    body: { ...messageBody(segment, target), attachments: [{ id: 0, filename: file.filename }] },
    files: [{ name: file.filename, data, contentType: file.mime }],
  };
}
