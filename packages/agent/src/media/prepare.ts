import { readFile } from "node:fs/promises";
import {
  type FetchedMedia,
  type FetchMediaOptions,
  type HubLogger,
  linkedSignal,
  type Media,
  MediaTooLargeError,
  type MsgContext,
  neutralizeRoleMarkers,
  normalizeText,
} from "@hub/core";
import type { ModelImage } from "../model.js";
import {
  bareMime,
  displayName,
  formatBytes,
  looksBinary,
  type MediaUse,
  mediaNote,
  mediaUse,
  sniffImageType,
} from "./kinds.js";
import type { MediaStore, StoredMedia } from "./store.js";
import type { Transcriber } from "./transcribe.js";

/** Longest time one attachment may take to download. */
const DOWNLOAD_TIMEOUT_MS = 120_000;

/** What the agent's model takes besides text. */
export interface ModelInputs {
  /** Images, up to `maxBytes` each (the provider's limit); absent: the model takes no images. */
  images?: { maxBytes: number } | undefined;
}

/** Fetches one attachment through the adapter of the message's channel account (undefined: not in this process). */
export type MediaFetcher = (
  ctx: Pick<MsgContext, "channel" | "accountId">,
) => ((media: Media, options: FetchMediaOptions) => Promise<FetchedMedia>) | undefined;

/** Everything the preparer needs, wired by the hub app. */
export interface MediaPreparerOptions {
  store: MediaStore;
  fetcher: MediaFetcher;
  /** `limits.maxAttachmentBytes`. */
  maxAttachmentBytes: number;
  /** Most characters of one text document. */
  maxDocumentChars: number;
  /** Most characters of all documents of one turn (a share of the context window). */
  documentBudgetChars: number;
  inputs: ModelInputs;
  transcribe?: Transcriber | undefined;
}

/** A turn's attachments, ready for the model and the user. */
export interface PreparedMedia {
  /** Per message of the batch: notes, document texts and transcripts, to follow its text. */
  texts: string[];
  images: ModelImage[];
  /** Clear sentences for the user about refused attachments, sent before the answer. */
  notices: string[];
  /** Attachments in all, and how many of them were refused for their size. */
  count: number;
  refused: number;
}

/** One attachment's contribution. */
interface Part {
  text: string;
  image?: ModelImage;
  notice?: string;
  refused?: boolean;
}

/**
 * Turns the attachments of a turn's messages into what the model gets:
 * images for a model that takes them (within the provider's size limit),
 * text documents as text within the turn's budget (cut with a visible
 * marker), voice and audio transcribed when a transcription model is set, a
 * short note for everything else. An attachment over `limits.maxAttachmentBytes`
 * (declared, or found while downloading) is refused: the user is told, the
 * model gets a note. Only what will be used is downloaded, into the media store.
 */
export class MediaPreparer {
  constructor(private readonly o: MediaPreparerOptions) {}

  async prepare(batch: MsgContext[], signal: AbortSignal, log: HubLogger): Promise<PreparedMedia> {
    const out: PreparedMedia = { texts: [], images: [], notices: [], count: 0, refused: 0 };
    const budget = { chars: this.o.documentBudgetChars };
    for (const ctx of batch) {
      const texts: string[] = [];
      for (const media of ctx.media) {
        const part = await this.#one(ctx, media, budget, signal, log);
        out.count += 1;
        texts.push(part.text);
        if (part.image) out.images.push(part.image);
        if (part.notice) out.notices.push(part.notice);
        if (part.refused) out.refused += 1;
      }
      out.texts.push(texts.join("\n"));
    }
    return out;
  }

  async #one(
    ctx: MsgContext,
    media: Media,
    budget: { chars: number },
    signal: AbortSignal,
    log: HubLogger,
  ): Promise<Part> {
    const max = this.o.maxAttachmentBytes;
    if (media.size !== undefined && media.size > max) return this.#refused(media, media.size, true);
    const use = mediaUse(media);
    if (!this.#wanted(use)) return { text: mediaNote(media, media.size, this.#remark(use)) };
    let stored: StoredMedia | undefined;
    try {
      stored = await this.#download(ctx, media, signal);
    } catch (error) {
      if (error instanceof MediaTooLargeError) return this.#refused(media, error.size, false);
      if (signal.aborted) throw error;
      log.warn({ err: error, kind: media.kind }, "attachment could not be downloaded");
      return { text: mediaNote(media, media.size, "could not be downloaded") };
    }
    if (!stored) return { text: mediaNote(media, media.size, "not available to download here") };
    if (use === "image") return this.#image(media, stored);
    if (use === "text") return this.#document(media, stored, budget);
    return this.#audio(media, stored, signal, log);
  }

  #wanted(use: MediaUse): boolean {
    if (use === "image") return this.o.inputs.images !== undefined;
    if (use === "audio") return this.o.transcribe !== undefined;
    return use === "text";
  }

  #remark(use: MediaUse): string | undefined {
    return use === "audio" ? "not transcribed (no transcription model is configured)" : undefined;
  }

  async #download(ctx: MsgContext, media: Media, signal: AbortSignal): Promise<StoredMedia | undefined> {
    const key = this.o.store.keyOf(ctx.channel, ctx.accountId, media.ref);
    const found = await this.o.store.find(key);
    if (found) return found;
    const fetch = this.o.fetcher(ctx);
    if (!fetch) return undefined;
    const max = this.o.maxAttachmentBytes;
    // A platform that stalls costs one attachment, not the whole run's time.
    const bounded = linkedSignal([signal], DOWNLOAD_TIMEOUT_MS);
    try {
      const fetched = await fetch(media, { maxBytes: max, signal: bounded.signal });
      return await this.o.store.save(key, fetched.body, max);
    } finally {
      bounded.release();
    }
  }

  #refused(media: Media, size: number, exact: boolean): Part {
    const name = displayName(media);
    const limit = formatBytes(this.o.maxAttachmentBytes);
    const it = exact ? `it is ${formatBytes(size)}` : "it is larger than that";
    return {
      text: mediaNote(
        media,
        exact ? size : undefined,
        `refused, over the ${limit} limit for attachments; the user was told`,
      ),
      notice: `I can't take ${name}: attachments can be at most ${limit}, and ${it}. Please send a smaller file.`,
      refused: true,
    };
  }

  async #image(media: Media, stored: StoredMedia): Promise<Part> {
    const limit = this.o.inputs.images?.maxBytes ?? 0;
    if (stored.size > limit) {
      const name = displayName(media);
      return {
        text: mediaNote(media, stored.size, `not shown, the model takes images up to ${formatBytes(limit)}`),
        notice: `${name} is ${formatBytes(stored.size)}, too large for the model to look at (at most ${formatBytes(limit)}).`,
        refused: true,
      };
    }
    const bytes = await readFile(stored.path);
    const mime = sniffImageType(bytes);
    if (!mime) return { text: mediaNote(media, stored.size, "not an image format the model takes") };
    return {
      text: mediaNote(media, stored.size, "attached"),
      image: { mime, data: bytes.toString("base64"), name: displayName(media) },
    };
  }

  async #document(media: Media, stored: StoredMedia, budget: { chars: number }): Promise<Part> {
    const bytes = await readFile(stored.path);
    if (looksBinary(bytes))
      return { text: mediaNote(media, stored.size, "not a text file, its content is not shown") };
    const name = displayName(media);
    const room = Math.max(0, Math.min(this.o.maxDocumentChars, budget.chars));
    if (room === 0)
      return {
        text: mediaNote(media, stored.size, "not shown, this turn's documents fill the context budget"),
      };
    // Only what can be shown is normalized (twice its room, for what normalizing merges): normalizing a
    // whole 19 MB file, line by line and character by character, held the event loop for 20 s and more.
    const raw = new TextDecoder().decode(bytes);
    const window = raw.slice(0, room * 2);
    const text = neutralizeRoleMarkers(normalizeText(window));
    const shown = text.slice(0, room);
    budget.chars -= shown.length;
    const rest = raw.length - window.length + (text.length - shown.length);
    const cut =
      rest > 0 ? `\n[${name} is cut here: ${rest.toLocaleString("en-US")} more characters not shown]` : "";
    return { text: `${mediaNote(media, stored.size, "its text follows")}\n${shown}${cut}\n[end of ${name}]` };
  }

  async #audio(media: Media, stored: StoredMedia, signal: AbortSignal, log: HubLogger): Promise<Part> {
    const transcribe = this.o.transcribe;
    if (!transcribe) return { text: mediaNote(media, stored.size, this.#remark("audio")) };
    try {
      const file = { path: stored.path, name: displayName(media), mime: bareMime(media.mime) };
      const text = neutralizeRoleMarkers(normalizeText(await transcribe(file, signal)));
      return { text: `${mediaNote(media, stored.size, "transcribed")}\n${text}` };
    } catch (error) {
      if (signal.aborted) throw error;
      log.warn({ err: error }, "voice or audio could not be transcribed");
      return { text: mediaNote(media, stored.size, "could not be transcribed") };
    }
  }
}

/** A message's text with short notes of its attachments (for the transcript and steered messages; nothing fetched). */
export function withMediaNotes(ctx: Pick<MsgContext, "body" | "media">): string {
  if (ctx.media.length === 0) return ctx.body;
  const notes = ctx.media.map((m) => mediaNote(m, m.size));
  return [ctx.body, ...notes].filter((line) => line !== "").join("\n");
}
