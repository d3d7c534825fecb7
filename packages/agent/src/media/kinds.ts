import { type Media, mediaFileName } from "@hub/core";

/** Image types the OpenAI-compatible and Anthropic APIs take. */
const MODEL_IMAGE_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

const TEXT_MIME =
  /^(text\/|application\/(json|x-ndjson|xml|yaml|x-yaml|toml|javascript|x-javascript|typescript|x-sh|x-shellscript|sql|csv|x-python|x-httpd-php|graphql|x-tex)\b|application\/[\w.-]+\+(json|xml)\b)/;

const TEXT_EXTENSIONS = new Set(
  (
    "txt text md markdown rst adoc csv tsv json jsonl ndjson yaml yml toml ini cfg conf env log xml html htm css scss " +
    "js mjs cjs ts tsx jsx py rb go rs java kt kts c h cc cpp hpp cs php sh bash zsh fish ps1 sql swift scala lua pl r " +
    "tex diff patch gradle properties vue svelte dockerfile makefile graphql proto"
  ).split(" "),
);

/** The bare content type (`image/jpeg` of `image/jpeg; q=1`), lowercased. */
export function bareMime(mime: string): string {
  return (mime.split(";")[0] ?? "").trim().toLowerCase();
}

/** The name the model and the user see: the sender's file name, or `photo.jpg`, `voice.ogg`. */
export function displayName(media: Media): string {
  return mediaFileName(media);
}

/** What the hub does with an attachment: show it, read it as text, transcribe it, or only mention it. */
export type MediaUse = "image" | "text" | "audio" | "note";

/** Decides from the kind, type and name (before downloading) what an attachment is for. */
export function mediaUse(media: Media): MediaUse {
  const mime = bareMime(media.mime);
  if ((media.kind === "image" || media.kind === "sticker") && MODEL_IMAGE_TYPES.has(mime)) return "image";
  if (media.kind === "document" && MODEL_IMAGE_TYPES.has(mime)) return "image";
  if (media.kind === "voice" || media.kind === "audio") return "audio";
  if (media.kind === "document" || media.kind === "other") {
    if (TEXT_MIME.test(mime)) return "text";
    const name = displayName(media).toLowerCase();
    const ext = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1) : name;
    if (TEXT_EXTENSIONS.has(ext)) return "text";
  }
  return "note";
}

/** A size as people read it: `512 B`, `120 KB`, `4.2 MB` (1 KB = 1024 B). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  const mb = bytes / (1024 * 1024);
  return `${mb >= 10 ? Math.round(mb) : Number(mb.toFixed(1))} MB`;
}

/** `[image: photo.jpg, 120 KB]`, or with a remark: `[voice: voice.ogg, 12 KB: not transcribed]`. */
export function mediaNote(media: Media, size: number | undefined, remark?: string): string {
  const label = media.kind === "sticker" ? "sticker" : media.kind;
  const sized = size === undefined ? "" : `, ${formatBytes(size)}`;
  return `[${label}: ${displayName(media)}${sized}${remark ? `: ${remark}` : ""}]`;
}

/** Whether a file's first bytes look binary (a NUL byte), so it is not given to the model as text. */
export function looksBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, 8192).includes(0);
}

/**
 * The image type by its first bytes (JPEG, PNG, GIF, WebP), whatever the platform called it:
 * Telegram re-encodes photos to JPEG, and a model API refuses an image whose declared type is wrong.
 */
export function sniffImageType(bytes: Uint8Array): string | undefined {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString("latin1");
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return "image/webp";
  return undefined;
}
