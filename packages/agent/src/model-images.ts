import { attachmentFallbackText, type HubLogger, type Outbox } from "@hub/core";
import type { SendFileInReply } from "./send-file.js";

const EXTENSIONS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
  // Not an image platforms show: it goes as a document, under its own name.
  "image/svg+xml": "svg",
};

/**
 * Sends the images a model puts in its answer, each in its place in the
 * reply: stored in the outbox and queued like a `send_file` file. An image
 * over `limits.maxAttachmentBytes` becomes a short note; without an outbox
 * (no delivery wiring) images are dropped with a log line.
 */
export function modelImageSender(
  options: { outbox?: Outbox | undefined; maxBytes: number; log: HubLogger },
  send: SendFileInReply,
  note: (text: string) => Promise<void>,
): (image: { mime: string; data: Uint8Array }) => Promise<void> {
  let count = 0;
  return async (image) => {
    count += 1;
    // A type without a known extension is named for what it is not known to be: never `.png`.
    const filename = `image-${count}.${EXTENSIONS[image.mime] ?? "bin"}`;
    if (!options.outbox) {
      options.log.warn({ mime: image.mime }, "the model returned an image but no outbox is wired; dropped");
      return;
    }
    if (image.data.byteLength > options.maxBytes) {
      await note(
        attachmentFallbackText(
          { filename, size: image.data.byteLength },
          "",
          "larger than limits.maxAttachmentBytes",
        ),
      );
      return;
    }
    await send(await options.outbox.put(image.data, filename, image.mime));
  };
}
