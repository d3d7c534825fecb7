import type { Media } from "./msg-context.js";

/** How an adapter fetches one attachment: never more than `maxBytes`, stopped by `signal`. */
export interface FetchMediaOptions {
  maxBytes: number;
  signal?: AbortSignal | undefined;
}

/** An attachment being downloaded: its bytes as a stream (already capped), and what the platform said about it. */
export interface FetchedMedia {
  body: AsyncIterable<Uint8Array>;
  /** The size the platform announced (declared size or Content-Length), when it did. */
  size?: number | undefined;
  /** The content type the platform answered with, when it is more precise than the message's. */
  mime?: string | undefined;
}

/**
 * An attachment larger than `limits.maxAttachmentBytes`, found before the
 * download (declared size, Content-Length) or during it (counted bytes).
 */
export class MediaTooLargeError extends Error {
  constructor(
    readonly limit: number,
    /** The size that was announced or reached when the download stopped. */
    readonly size: number,
  ) {
    super(`the attachment is larger than ${limit} bytes (limits.maxAttachmentBytes)`);
    this.name = "MediaTooLargeError";
  }
}

/** Throws `MediaTooLargeError` when a declared size is over the cap (nothing is downloaded then). */
export function checkDeclaredSize(size: number | undefined, maxBytes: number): void {
  if (size !== undefined && size > maxBytes) throw new MediaTooLargeError(maxBytes, size);
}

/**
 * Passes a byte stream through while counting it; past `maxBytes` it throws
 * `MediaTooLargeError` (the source is closed by the `for await`), so a
 * platform that lied about the size, or announced none, still cannot fill the disk.
 */
export async function* capBytes(
  source: AsyncIterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  let total = 0;
  for await (const chunk of source) {
    total += chunk.byteLength;
    if (total > maxBytes) throw new MediaTooLargeError(maxBytes, total);
    yield chunk;
  }
}

/** What `fetchMediaUrl` needs besides the URL. */
export interface FetchMediaUrlOptions extends FetchMediaOptions {
  /** The platform's name, for error messages ("Telegram file download failed ..."). */
  platform: string;
  headers?: Record<string, string>;
  /** The size the message announced, checked before anything is requested. */
  declaredSize?: number | undefined;
  /** Content types that mean "not the file" (a login page instead of a private file). */
  refuseMime?: RegExp;
}

/**
 * Downloads an attachment over HTTP as a capped stream: the declared size and
 * the Content-Length are checked before the body is read, the counted bytes
 * while it is. Shared by the adapters whose platforms serve files by URL.
 */
export async function fetchMediaUrl(url: string, o: FetchMediaUrlOptions): Promise<FetchedMedia> {
  checkDeclaredSize(o.declaredSize, o.maxBytes);
  const res = await fetch(url, { headers: o.headers ?? {}, signal: o.signal ?? null });
  const close = () => res.body?.cancel().catch(() => {});
  if (!res.ok || !res.body) {
    await close();
    throw new Error(`${o.platform} file download failed with HTTP ${res.status}`);
  }
  const mime = res.headers.get("content-type") ?? undefined;
  if (mime && o.refuseMime?.test(mime)) {
    await close();
    throw new Error(
      `${o.platform} answered with ${mime} instead of the file (is the bot allowed to read files?)`,
    );
  }
  const length = Number(res.headers.get("content-length") ?? Number.NaN);
  const size = Number.isSafeInteger(length) && length >= 0 ? length : undefined;
  if (size !== undefined && size > o.maxBytes) {
    await close();
    throw new MediaTooLargeError(o.maxBytes, size);
  }
  return {
    body: capBytes(res.body as unknown as AsyncIterable<Uint8Array>, o.maxBytes),
    size: size ?? o.declaredSize,
    ...(mime && mime !== "application/octet-stream" ? { mime } : {}),
  };
}

/** A file name for an attachment without one (a photo, a voice note): `photo.jpg`, `voice.ogg`. */
export function mediaFileName(media: Pick<Media, "kind" | "mime" | "name">): string {
  if (media.name) return media.name;
  const base = media.kind === "image" ? "photo" : media.kind;
  const subtype = (media.mime.split(";")[0] ?? "").split("/")[1]?.trim() ?? "";
  const ext = EXTENSIONS[subtype] ?? (/^[a-z0-9]{1,5}$/.test(subtype) ? subtype : "bin");
  return `${base}.${ext}`;
}

const EXTENSIONS: Record<string, string> = {
  jpeg: "jpg",
  "svg+xml": "svg",
  mpeg: "mp3",
  "x-m4a": "m4a",
  plain: "txt",
  markdown: "md",
  "octet-stream": "bin",
};

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what file names lose
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;

/**
 * A sender's file name made safe to show and to store: no directories, no
 * control characters, at most 200 characters; undefined when nothing is left.
 */
export function cleanMediaName(raw: unknown): string | undefined {
  if (typeof raw !== "string") return undefined;
  const base = raw.split(/[\\/]/).at(-1) ?? "";
  const clean = base.replace(CONTROL_CHARACTERS, "").trim().slice(0, 200);
  return clean === "" || clean === "." || clean === ".." ? undefined : clean;
}
