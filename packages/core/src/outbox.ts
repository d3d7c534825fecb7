import { randomUUID } from "node:crypto";
import { mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import { z } from "zod";

/**
 * A file waiting in the outbox, as a reply segment carries it through the
 * queue: a reference to the bytes, never the bytes (queued items stay small).
 */
export const OutboxFileSchema = z
  .object({
    /** The file's name inside the outbox directory. */
    ref: z.string().regex(/^[a-z0-9]+-[0-9a-f-]{36}$/, "not an outbox reference"),
    filename: z.string().min(1).max(255),
    mime: z.string().min(1).max(255),
    kind: z.enum(["image", "file"]),
    size: z.number().int().nonnegative(),
  })
  .strict();
/** A file in the outbox, referenced by a queued reply segment. */
export type OutboxFile = z.infer<typeof OutboxFileSchema>;

/** Image types every platform shows inline; other images go as documents. */
const INLINE_IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

const MIME_BY_EXTENSION: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".svg": "image/svg+xml",
  ".pdf": "application/pdf",
  ".txt": "text/plain",
  ".md": "text/markdown",
  ".csv": "text/csv",
  ".json": "application/json",
  ".html": "text/html",
  ".xml": "application/xml",
  ".zip": "application/zip",
  ".mp3": "audio/mpeg",
  ".ogg": "audio/ogg",
  ".mp4": "video/mp4",
};

/** The MIME type of a file name, from its extension (`application/octet-stream` when unknown). */
export function mimeOfFilename(filename: string): string {
  return MIME_BY_EXTENSION[extname(filename).toLowerCase()] ?? "application/octet-stream";
}

/** Whether a file is sent as an inline image or as a document. */
export function attachmentKindOf(mime: string): "image" | "file" {
  return INLINE_IMAGES.has(mime) ? "image" : "file";
}

/** A file name safe on every platform and file system: no directories, no control characters, at most 120 characters. */
export function safeFilename(name: string): string {
  const cleaned = basename(name.replace(/\\/g, "/"))
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
    .replace(/[\u0000-\u001f\u007f-\u009f<>:"|?*]/g, "_")
    // Direction overrides and invisible marks (`report\u202Egpj.exe` shows as "reportexe.jpg"), line
    // separators: a name shows what it is.
    .replace(/[\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g, "")
    .trim();
  const ext = extname(cleaned).slice(0, 16);
  // Cut by characters, never through an emoji's surrogate pair.
  const stem = Array.from(cleaned.slice(0, cleaned.length - ext.length))
    .slice(0, 120 - ext.length)
    .join("");
  return stem && stem !== "." && stem !== ".." ? `${stem}${ext}` : `file${ext}`;
}

/** A size for people: `812 B`, `120 KB`, `3.4 MB`. */
export function humanBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** What a chat that cannot receive files (or a file that is gone) gets instead, with the caption. */
export function attachmentFallbackText(
  file: Pick<OutboxFile, "filename" | "size">,
  caption: string,
  why = "this chat cannot receive files",
): string {
  const note = `[file: ${file.filename}, ${humanBytes(file.size)}; not attached: ${why}]`;
  return caption ? `${caption}\n\n${note}` : note;
}

/**
 * The outbox: files a reply sends, kept in `<state dir>/outbox` until their
 * segment is delivered and for `retentionMs` after (the sweeper deletes older
 * ones). The queue holds only the reference; the process that delivers reads
 * the bytes from here, so split roles need this directory shared.
 */
export class Outbox {
  constructor(
    readonly dir: string,
    readonly retentionMs = 24 * 3600_000,
  ) {}

  /** Stores bytes under a new reference; returns what a segment carries. */
  async put(bytes: Uint8Array, filename: string, mime = mimeOfFilename(filename)): Promise<OutboxFile> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const ref = `${Date.now().toString(36)}-${randomUUID()}`;
    await writeFile(join(this.dir, ref), bytes, { mode: 0o600 });
    return {
      ref,
      filename: safeFilename(filename),
      mime,
      kind: attachmentKindOf(mime),
      size: bytes.byteLength,
    };
  }

  /** The path of a reference's bytes (the reference is validated: it can name nothing outside the outbox). */
  pathOf(ref: string): string {
    return join(this.dir, OutboxFileSchema.shape.ref.parse(ref));
  }

  /** Deletes files older than the retention; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return 0; // no outbox yet
    }
    let removed = 0;
    for (const name of names) {
      const path = join(this.dir, name);
      const info = await stat(path).catch(() => undefined);
      if (!info || now - info.mtimeMs <= this.retentionMs) continue;
      await rm(path, { force: true });
      removed++;
    }
    return removed;
  }
}
