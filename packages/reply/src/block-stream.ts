import {
  cutFront,
  type FenceOpener,
  isFenceCloser,
  MIN_CHUNK_LIMIT,
  parseFenceOpener,
  shortenOpener,
} from "./chunk.js";

export interface BlockStreamerOptions {
  /** Blocks shorter than this are held back and merged with the next one. Default 1. */
  minChars?: number;
  /** Cap on a block's length; longer text is cut at the best break, like `chunkText`. Default 3000. */
  maxChars?: number;
}

/**
 * Turns a model's streamed text deltas into complete markdown blocks as soon as they are ready, so a long
 * answer starts reaching the user before the model has finished.
 *
 * A block ends at a blank line that is not inside a code fence. When the pending text grows past `maxChars`
 * without such a blank line, a block is cut at the best break within `maxChars` (fence edge > line > sentence
 * > word > hard cut); a cut inside a code fence closes the fence and reopens it, with its info string, at the
 * start of the next block. Blocks shorter than `minChars` are merged with the following one (joined by a
 * blank line) unless that would exceed `maxChars`.
 *
 * Blocks depend only on the text, not on how it was split into deltas: the text is processed as if it had
 * arrived one character at a time. Joining all blocks with "\n\n" gives back the text, up to whitespace at
 * block edges and the added fence lines.
 */
export class BlockStreamer {
  readonly #minChars: number;
  readonly #maxChars: number;
  /** Text not emitted yet; after a cut inside a fence it starts with the reopening fence line. */
  #buf = "";
  /** Index in #buf of the first line not classified yet. */
  #scan = 0;
  /** Fence open at #scan. */
  #fence: FenceOpener | null = null;
  /** Whether the open fence has had a non-blank line. */
  #fenceHasCode = false;
  /** #buf starts with a fence line inserted by a cut, and that fence has not closed yet. */
  #reopened = false;
  /** A block shorter than minChars, waiting for the next one. */
  #held: string | null = null;
  /** After an overflow that could not be cut well: how much text (from the block start) to wait for. */
  #need = 0;

  constructor(options: BlockStreamerOptions = {}) {
    const minChars = options.minChars ?? 1;
    const maxChars = options.maxChars ?? 3000;
    if (!(maxChars >= MIN_CHUNK_LIMIT)) {
      throw new RangeError(`BlockStreamer: maxChars must be at least ${MIN_CHUNK_LIMIT}, got ${maxChars}`);
    }
    if (!(minChars >= 0) || minChars > maxChars) {
      throw new RangeError(`BlockStreamer: minChars must be between 0 and maxChars, got ${minChars}`);
    }
    this.#minChars = minChars;
    this.#maxChars = Math.floor(maxChars);
  }

  /** Adds a delta; returns the blocks it completed, in order (often none). */
  push(delta: string): string[] {
    const out: string[] = [];
    if (delta === "") return out;
    this.#buf += delta;
    this.#drain(out, false);
    return out;
  }

  /**
   * The text received but not emitted yet (a short block held for merging, then the rest), as a live
   * preview shows it. Emitting nothing, it changes nothing.
   */
  pending(): string {
    const rest = this.#buf.trim();
    if (this.#held === null) return rest;
    return rest === "" ? this.#held : `${this.#held}\n\n${rest}`;
  }

  /** Ends the stream: returns the remaining blocks (trimmed, non-empty) and resets the streamer. */
  flush(): string[] {
    const out: string[] = [];
    this.#drain(out, true);
    const rest = this.#buf.trim();
    if (rest !== "") this.#emit(rest, out);
    if (this.#held !== null) out.push(this.#held);
    this.#buf = "";
    this.#scan = 0;
    this.#fence = null;
    this.#fenceHasCode = false;
    this.#reopened = false;
    this.#held = null;
    this.#need = 0;
    return out;
  }

  /**
   * Emits every block the buffer allows. Events are taken in the order they would occur if the text arrived
   * one character at a time: a line is classified only if it completes before the buffer would overflow,
   * and an overflow cut looks only at the text held at that moment (see #cut). That is what makes the output
   * independent of delta sizes.
   */
  #drain(out: string[], final: boolean): void {
    for (;;) {
      const start = firstNonWhitespace(this.#buf);
      const overflowAt = start + this.#maxChars;
      let changed = false;
      for (;;) {
        let nl = this.#buf.indexOf("\n", this.#scan);
        if (nl < 0) {
          if (!final || this.#scan >= this.#buf.length) break;
          nl = this.#buf.length; // the stream has ended, so the last line is complete too
        }
        if (nl > overflowAt) break;
        const lineStart = this.#scan;
        this.#scan = nl + 1;
        if (this.#onLine(this.#buf.slice(lineStart, nl), lineStart, out)) {
          changed = true;
          break;
        }
      }
      if (changed) continue;
      if (this.#buf.length - start > this.#maxChars) {
        if (!this.#cut(start, out, final)) return;
        continue;
      }
      return;
    }
  }

  /** Classifies one complete line; returns true when it changed #buf (a block ended). */
  #onLine(line: string, lineStart: number, out: string[]): boolean {
    if (this.#fence !== null) {
      if (!isFenceCloser(line, this.#fence)) {
        if (line.trim() !== "") this.#fenceHasCode = true;
        return false;
      }
      if (this.#reopened && !this.#fenceHasCode) {
        // A cut fell right before the closer: drop the reopened fence instead of sending an empty code block.
        this.#buf = this.#buf.slice(this.#scan);
        this.#scan = 0;
        this.#fence = null;
        this.#reopened = false;
        return true;
      }
      this.#fence = null;
      this.#reopened = false;
      return false;
    }
    const opener = parseFenceOpener(line);
    if (opener !== null) {
      this.#fence = opener;
      this.#fenceHasCode = false;
      return false;
    }
    if (line.trim() !== "") return false;
    // A blank line outside any fence: everything before it is a complete block.
    const block = this.#buf.slice(0, lineStart).trim();
    this.#buf = this.#buf.slice(this.#scan);
    this.#scan = 0;
    if (block !== "") this.#emit(block, out);
    return true;
  }

  /**
   * The buffer outgrew maxChars without a blank line: cut it like chunkText would, looking only at what the
   * buffer held once it had half a block more (or, when that was not enough to cut well, twice as much, and so on).
   * Returns true when #buf changed, false when the cut has to wait for more text.
   */
  #cut(start: number, out: string[], final: boolean): boolean {
    // The window reaches half a block past the limit: a span kept whole (inline code, a link, bold: at most
    // half a block, see inlineSpans) that opens before the cut closes within it, so the cut can see it.
    const need = Math.max(this.#maxChars + Math.ceil(this.#maxChars / 2) + 1, this.#need);
    if (!final && this.#buf.length - start < need) return false;
    let end = final ? this.#buf.length : start + need;
    if (this.#buf.startsWith("```", start) || this.#buf.startsWith("~~~", start)) {
      // The first line may be a fence opener longer than maxChars. Whether it is one (to be shortened, never
      // cut) or just text ("```x``` ...") depends on the whole line: wait for it and let the cut see all of it.
      const nl = this.#buf.indexOf("\n", start);
      if (nl < 0 && !final) return false;
      const lineEnd = nl < 0 ? this.#buf.length : nl;
      // A last line with nothing after it is left alone: it opens no code, and its "info" may be prose.
      const short = nl < 0 ? null : shortenOpener(this.#buf.slice(start, lineEnd), this.#maxChars);
      if (short !== null) {
        this.#buf = short + this.#buf.slice(lineEnd);
        this.#scan = 0;
        this.#fence = null;
        this.#need = 0;
        return true;
      }
      end = Math.min(this.#buf.length, Math.max(end, lineEnd + 1));
    }
    const cut = cutFront(this.#buf.slice(start, end), this.#maxChars, end < this.#buf.length || !final);
    if (cut === null) {
      this.#need = 2 * (end - start);
      return this.#buf.length - start >= this.#need;
    }
    const tail = this.#buf.slice(start + cut.rest);
    this.#buf = cut.reopen === null ? tail : `${cut.reopen}\n${tail}`;
    this.#scan = 0;
    this.#fence = null;
    this.#reopened = cut.reopen !== null;
    this.#need = 0;
    if (cut.head !== "") this.#emit(cut.head, out);
    return true;
  }

  #emit(block: string, out: string[]): void {
    let next = block;
    if (this.#held !== null) {
      const merged = `${this.#held}\n\n${block}`;
      // maxChars is a hard cap and minChars only a preference: send the short block alone if it must.
      if (merged.length <= this.#maxChars) next = merged;
      else out.push(this.#held);
      this.#held = null;
    }
    if (next.length < this.#minChars) this.#held = next;
    else out.push(next);
  }
}

function firstNonWhitespace(text: string): number {
  // Most often the first character, printable ASCII: no regex run per delta.
  const c = text.charCodeAt(0);
  if (c > 32 && c < 127) return 0;
  const i = text.search(/\S/);
  return i < 0 ? text.length : i;
}
