/**
 * Markdown-aware splitting of a reply into messages that fit a chat platform's size limit
 * (Telegram 4096, Discord 2000, ...). Pure functions, no I/O.
 */

import { inlineSpans, SpanCursor } from "./inline-spans.js";

/** Smallest limit accepted: below it a reopened code fence plus its closer leaves almost no room for code. */
export const MIN_CHUNK_LIMIT = 16;

// Break kinds, best first. A cut uses the best kind that exists in the window, and the last one of that kind.
const PARAGRAPH = 0; // blank line, or the edge of a fenced code block
const LINE = 1; // line break (inside a fence: between two code lines, with close/reopen)
const SENTENCE = 2; // `. ! ?` followed by a space
const WORD = 3; // space or tab

/** A fence opener line: ```` ```ts ````, `~~~`, `` ```` `` with its indentation and info string. */
export interface FenceOpener {
  readonly indent: string;
  /** The run of backticks or tildes, e.g. "```" or "~~~~". */
  readonly marker: string;
  /** Trimmed info string, e.g. "ts" or "js title=a.js"; "" when absent. */
  readonly info: string;
}

// Indentation is any whitespace but "\n" (not just spaces and tabs): segments are trimmed with JS `trim()`, so
// a line like "\u00a0```" becomes a fence once it starts a segment. `[^\n]*` rather than `.*`, which stops
// at "\r" and would miss "```ts\r" in CRLF text.
const FENCE_LINE = /^([^\S\n]*)(`{3,}|~{3,})([^\n]*)$/;

/** Parses a line as a fence opener; null when the line is not one. */
export function parseFenceOpener(line: string): FenceOpener | null {
  const m = FENCE_LINE.exec(line);
  if (m === null) return null;
  const marker = m[2]!;
  const info = m[3]!.trim();
  // "```x```" on one line is inline code, not a fence (CommonMark: no backticks in a backtick info string).
  if (marker[0] === "`" && info.includes("`")) return null;
  return { indent: m[1]!, marker, info };
}

/** True when `line` closes a fence opened by `opener`: same character, at least as long, nothing after. */
export function isFenceCloser(line: string, opener: FenceOpener): boolean {
  const m = FENCE_LINE.exec(line);
  return (
    m !== null && m[2]![0] === opener.marker[0] && m[2]!.length >= opener.marker.length && m[3]!.trim() === ""
  );
}

/** How a fence is opened at the top of a segment and closed at its bottom. */
interface OpenFence {
  readonly fence: FenceOpener;
  readonly opener: string;
  readonly closer: string;
}

type LineKind = "text" | "blank" | "open" | "code" | "close";

interface Line {
  readonly start: number;
  /** Index of the terminating "\n", or text length for the last line. */
  readonly end: number;
  readonly kind: LineKind;
  /** The fence as written, for "open", "code" and "close" lines. */
  readonly fence: OpenFence | null;
}

/** Where the next segment starts; `fence` is set when it starts inside a fence that must be reopened. */
interface Cursor {
  readonly pos: number;
  readonly fence: OpenFence | null;
}

interface Cut {
  /** End of the segment's content, trailing whitespace excluded. */
  readonly end: number;
  /** Where the following segment resumes. */
  readonly next: number;
  /** Fence left open at the cut: closed at the end of this segment, reopened at the start of the next. */
  readonly fence: OpenFence | null;
  /** The kind of break (PARAGRAPH ... WORD) for a cut at one; none for a hard cut. */
  readonly rank?: number;
}

/**
 * Splits a markdown reply into segments of at most `limit` characters (UTF-16 code units, i.e. JS string
 * length), for platforms that cap message size.
 *
 * Greedy: each segment takes as much text as fits and ends at the best break available within the limit,
 * ranked paragraph (blank line, or the edge of a code block) > line break > sentence end > word > hard cut;
 * among breaks of the best rank the last one is used. Segments are trimmed and never empty.
 *
 * Fenced code blocks (``` or ~~~) are kept whole when they fit. A block longer than the limit is split
 * between its lines: the segment ends with a closing fence and the next one reopens it with the same info
 * string (these lines count towards the limit), so every segment has balanced fences as long as the input
 * does. Hard cuts never split a surrogate pair and, where `Intl.Segmenter` exists, not a grapheme either.
 *
 * @param text markdown to split; empty or whitespace-only text gives `[]`
 * @param limit maximum segment length, at least {@link MIN_CHUNK_LIMIT}
 * @throws RangeError when `limit` is below {@link MIN_CHUNK_LIMIT} or NaN
 */
export function chunkText(text: string, limit: number): string[] {
  if (!(limit >= MIN_CHUNK_LIMIT)) {
    throw new RangeError(`chunkText: limit must be at least ${MIN_CHUNK_LIMIT}, got ${limit}`);
  }
  const max = Math.floor(limit);
  const body = text.trim();
  if (body === "") return [];
  if (body.length <= max) return [body];

  const lines = scanLines(body, max);
  const out: string[] = [];
  let cursor: Cursor = { pos: 0, fence: null };
  for (;;) {
    cursor = normalize(body, lines, cursor);
    if (cursor.pos >= body.length) break;
    const prefix = cursor.fence ? `${cursor.fence.opener}\n` : "";
    if (prefix.length + body.length - cursor.pos <= max) {
      out.push(prefix + body.slice(cursor.pos));
      break;
    }
    const { segment, next } = step(body, lines, cursor, max);
    if (segment !== null) out.push(segment);
    cursor = next;
  }
  return out;
}

/**
 * @internal For BlockStreamer. Cuts one segment of at most `limit` characters off the front of `text`,
 * choosing the break exactly like {@link chunkText}, even when `text` would fit whole. With `partial`, `text`
 * is only the start of a stream: its end is never treated as a boundary, and null means "not enough text to
 * cut well yet, ask again with more". `rest` is where the remainder starts in `text`; `reopen` is the fence
 * line to put in front of it when the cut fell inside a code block.
 */
export function cutFront(
  text: string,
  limit: number,
  partial: boolean,
): { head: string; rest: number; reopen: string | null } | null {
  if (!(limit >= MIN_CHUNK_LIMIT)) {
    throw new RangeError(`cutFront: limit must be at least ${MIN_CHUNK_LIMIT}, got ${limit}`);
  }
  const max = Math.floor(limit);
  const lines = scanLines(text, max);
  let cursor: Cursor = { pos: skipWhitespace(text, 0), fence: null };
  while (cursor.pos < text.length) {
    const { segment, next, starved } = step(text, lines, cursor, max, partial);
    if (starved) return null;
    if (segment !== null) return { head: segment, rest: next.pos, reopen: next.fence?.opener ?? null };
    cursor = normalize(text, lines, next);
  }
  // Only blanks after a rewritten opener: wait for code to follow (at the end of the stream, drop it all).
  return partial ? null : { head: "", rest: text.length, reopen: null };
}

/**
 * @internal For BlockStreamer. When `line` is a fence opener too long to share a segment of `limit` with even
 * two characters of code, returns the shortened opener to use instead (as chunkText does); otherwise null.
 */
export function shortenOpener(line: string, limit: number): string | null {
  const opener = parseFenceOpener(line);
  if (opener === null || opener.marker.length > maxMarkerLength(limit)) return null;
  const closer = opener.indent + opener.marker;
  if (line.length + closer.length + 4 <= limit) return null;
  return reopenFence(opener, limit).opener;
}

/** Longest fence marker that can be balanced within `limit` (longer ones are treated as plain text). */
function maxMarkerLength(limit: number): number {
  // The bare open and close lines must leave room for two code units (one surrogate pair).
  return Math.floor((limit - 4) / 2);
}

/** Classifies every line once, so each cut only looks at its own window. */
function scanLines(text: string, limit: number): Line[] {
  // A fence that cannot be split while staying balanced (absurdly long marker) is treated as plain text.
  const maxMarker = maxMarkerLength(limit);
  const lines: Line[] = [];
  let open: OpenFence | null = null;
  let start = 0;
  for (;;) {
    const nl = text.indexOf("\n", start);
    const end = nl < 0 ? text.length : nl;
    const raw = text.slice(start, end);
    let kind: LineKind;
    let fence: OpenFence | null = null;
    if (open !== null) {
      fence = open;
      if (isFenceCloser(raw, open.fence)) {
        kind = "close";
        open = null;
      } else {
        kind = "code";
      }
    } else {
      const opener = parseFenceOpener(raw);
      if (opener !== null && opener.marker.length <= maxMarker) {
        open = fence = {
          fence: opener,
          opener: opener.indent + opener.marker + opener.info,
          closer: opener.indent + opener.marker,
        };
        kind = "open";
      } else {
        kind = raw.trim() === "" ? "blank" : "text";
      }
    }
    lines.push({ start, end, kind, fence });
    if (nl < 0) return lines;
    start = nl + 1;
  }
}

/**
 * Opener/closer pair used when a fence continues in a new segment. Indentation is dropped (it means nothing
 * at the top of a message, and segments are trimmed). The info string is kept unless the opener would eat
 * more than half the limit; then it falls back to marker + language, then to the bare marker.
 */
function reopenFence(fence: FenceOpener, limit: number): OpenFence {
  const room = limit / 2;
  const closer = fence.marker;
  for (const opener of [fence.marker + fence.info, fence.marker + (fence.info.split(/\s/)[0] ?? "")]) {
    if (opener.length + closer.length + 2 <= room) return { fence, opener, closer };
  }
  return { fence, opener: fence.marker, closer };
}

/** Moves the cursor to where the next segment's content really starts; pos >= length means done. */
function normalize(text: string, lines: readonly Line[], cursor: Cursor): Cursor {
  if (cursor.fence === null) return { pos: skipWhitespace(text, cursor.pos), fence: null };
  // Inside a reopened fence: skip blank code lines (but keep the indentation of the first real one), and if
  // nothing but blanks is left before the closer, drop the fence rather than emit an empty code block.
  for (let j = lineAt(lines, cursor.pos, 0); j < lines.length; j++) {
    const line = lines[j]!;
    if (line.kind === "close") return { pos: skipWhitespace(text, line.end + 1), fence: null };
    if (line.kind !== "code") return { pos: skipWhitespace(text, line.start), fence: null };
    const from = Math.max(cursor.pos, line.start);
    if (text.slice(from, line.end).trim() !== "") return { pos: from, fence: cursor.fence };
  }
  return { pos: text.length, fence: cursor.fence };
}

/**
 * Cuts one segment starting at `cursor`; the remaining text is known not to fit. A null segment means "no
 * output yet, normalize `next` and try again" (used when the start of the segment has to be rewritten).
 * `partial`: `text` is only the start of a stream, so its end is no place for a hard cut; `starved` then
 * says that only a last-resort cut was found because the text ran out, and more text should be awaited.
 */
function step(
  text: string,
  lines: readonly Line[],
  cursor: Cursor,
  limit: number,
  partial = false,
): { segment: string | null; next: Cursor; starved?: boolean } {
  const li = lineAt(lines, cursor.pos, 0);
  let cut = findCut(text, lines, li, cursor, limit, partial);
  if (cut !== null && leavesShortHead(text, cursor, cut, limit)) {
    // "You said: <a 4,000-character word>": a word break near the start would only make a tiny segment
    // before the word is cut anyway. Whether the word outgrows a segment may not be known yet mid-stream.
    const budget = limit - prefixLength(cursor);
    const after = unbrokenRun(text, lastBreak(text, cut.next, cursor.pos + budget), budget, partial);
    if (after === "unknown") return { segment: null, next: cursor, starved: true };
    if (after === "longer") cut = hardCut(text, lines, li, cursor, limit, partial) ?? cut;
  }
  cut ??= hardCut(text, lines, li, cursor, limit, partial);
  if (cut === null) {
    const line = lines[li]!;
    const indented = skipWhitespace(text, cursor.pos);
    if (cursor.fence !== null && indented > cursor.pos && indented < line.end) {
      // Reopened fence with a tiny limit: the code line's indentation leaves no room for code. Drop it.
      return { segment: null, next: { pos: indented, fence: cursor.fence } };
    }
    if (cursor.fence === null && line.kind === "open" && line.end < text.length) {
      // The opener itself is too long to share a segment with any code (a huge info string): continue as
      // if the fence had been reopened with a shortened opener.
      return { segment: null, next: { pos: line.end + 1, fence: reopenFence(line.fence!.fence, limit) } };
    }
    if (partial && cursor.pos + limit - prefixLength(cursor) >= lines[lines.length - 1]!.start) {
      return { segment: null, next: cursor, starved: true };
    }
    // Last resort: a plain cut that only respects surrogates and graphemes. Only reached for a prose line
    // that starts with ``` (inline code) and is longer than the limit: any piece of it reads as an opener.
    cut = plainCut(text, cursor, limit, partial);
  }
  const prefix = cursor.fence ? `${cursor.fence.opener}\n` : "";
  const suffix = cut.fence ? `\n${cut.fence.closer}` : "";
  return {
    segment: prefix + text.slice(cursor.pos, cut.end) + suffix,
    next: { pos: cut.next, fence: cut.fence ? reopenFence(cut.fence.fence, limit) : null },
  };
}

/** Scans the window once, remembering the last fitting break of each kind; returns the best kind's. */
function findCut(
  text: string,
  lines: readonly Line[],
  li: number,
  cursor: Cursor,
  limit: number,
  partial: boolean,
): Cut | null {
  const pos = cursor.pos;
  const budget = limit - prefixLength(cursor);
  const best: Array<Cut | undefined> = [];
  let lastNonWs = pos; // end of the content seen so far, trailing whitespace excluded
  let contentFrom = pos; // a cut inside a fence opened in this window must keep some of its code

  // `line` is set for a cut in the middle of that line.
  const consider = (rank: number, end: number, next: number, fence: OpenFence | null, line?: Line): void => {
    if (end <= pos || (fence !== null && end <= contentFrom)) return;
    const size = end - pos + (fence ? fence.closer.length + 1 : 0);
    if (size > budget) return;
    if (line !== undefined && splitMakesFence(text, line, pos, end, next, fence, partial)) return;
    best[rank] = { end, next, fence, rank };
  };

  scan: for (let i = li; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = fenceOf(line, cursor);
    if (line.kind === "open") contentFrom = line.end + 1;
    // Opener and closer lines are never cut inside: that would unbalance the fence.
    const breakable = line.kind === "text" || line.kind === "code";
    const inCode = line.kind === "code";
    const spans = proseSpans(text, line, pos, budget);
    for (let k = Math.max(line.start, pos); k < line.end; k++) {
      const c = text.charCodeAt(k);
      if (isWhitespace(c)) {
        const runStart = (c === 32 || c === 9) && !isBreakSpace(text.charCodeAt(k - 1));
        if (breakable && runStart && lastNonWs > Math.max(line.start, pos) && !spans.inside(k)) {
          let next = k + 1;
          while (next < line.end && isWhitespace(text.charCodeAt(next))) next++;
          consider(WORD, lastNonWs, next, inCode ? fence : null, line);
          if (!inCode && endsSentence(text, line.start, lastNonWs)) {
            consider(SENTENCE, lastNonWs, next, null, line);
          }
        }
        continue;
      }
      // Any cut past a non-space character that does not fit cannot fit either.
      if (k + 1 - pos > budget) break scan;
      lastNonWs = k + 1;
    }
    if (line.end >= text.length) break;
    const after = lines[i + 1]!;
    if (line.kind === "open" || line.kind === "code") {
      consider(LINE, lastNonWs, line.end + 1, fence);
    } else if (
      line.kind === "close" ||
      line.kind === "blank" ||
      after.kind === "open" ||
      after.kind === "blank"
    ) {
      consider(PARAGRAPH, lastNonWs, line.end + 1, null);
    } else {
      consider(LINE, lastNonWs, line.end + 1, null);
    }
  }
  for (const cut of best) if (cut !== undefined) return cut;
  return null;
}

/** Prose: no word break inside inline code, a link or bold that could stay whole in a segment. */
function proseSpans(text: string, line: Line, pos: number, budget: number): SpanCursor {
  if (line.kind !== "text") return new SpanCursor([]);
  const from = Math.max(line.start, pos);
  return new SpanCursor(inlineSpans(text, from, line.end, pos + budget, Math.floor(budget / 2)));
}

/** A sentence or word break that leaves less than half a segment before it. */
function leavesShortHead(text: string, cursor: Cursor, cut: Cut, limit: number): boolean {
  if (cut.rank === undefined || cut.rank < SENTENCE) return false;
  return cut.end - cursor.pos < (limit - prefixLength(cursor)) / 2 && text.length - cut.next > 0;
}

/** Where the text after the last space, tab or line break in [from, to) starts (`from` when there is none). */
function lastBreak(text: string, from: number, to: number): number {
  for (let k = Math.min(to, text.length) - 1; k >= from; k--) if (isBreakAt(text, k)) return k + 1;
  return from;
}

/**
 * Whether the text from `from` runs longer than `budget` without a space, tab or line break ("longer"),
 * breaks within it ("breaks"), or, in a partial text, has not arrived far enough to tell ("unknown").
 */
function unbrokenRun(
  text: string,
  from: number,
  budget: number,
  partial: boolean,
): "longer" | "breaks" | "unknown" {
  const to = Math.min(text.length, from + budget + 1);
  for (let k = from; k < to; k++) if (isBreakAt(text, k)) return "breaks";
  if (to > from + budget) return "longer";
  return partial ? "unknown" : "breaks";
}

/** No break fits: cut a text or code line as late as possible (e.g. a long URL or a minified code line). */
function hardCut(
  text: string,
  lines: readonly Line[],
  li: number,
  cursor: Cursor,
  limit: number,
  partial: boolean,
): Cut | null {
  const pos = cursor.pos;
  const budget = limit - prefixLength(cursor);
  // The end of a partial text may split a surrogate pair or grapheme with what follows: never cut there.
  const textEnd = partial ? text.length - 1 : text.length;
  for (let j = lineAt(lines, Math.min(pos + budget, text.length) - 1, li); j >= li; j--) {
    const line = lines[j]!;
    if (line.kind !== "text" && line.kind !== "code") continue;
    const fence = line.kind === "code" ? fenceOf(line, cursor) : null;
    const lo = Math.max(line.start, pos);
    let hi = Math.min(line.end, textEnd, pos + budget - (fence ? fence.closer.length + 1 : 0));
    // A few steps back if the cut would leave a piece that reads as a fence line (e.g. "```" of "```x```").
    for (let tries = 0; hi > lo && tries < 8; tries++) {
      const next = safeEnd(text, lo, hi);
      if (next <= lo) break;
      const end = trimEnd(text, lo, next);
      if (end > lo && !splitMakesFence(text, line, pos, end, next, fence, partial)) {
        return { end, next, fence };
      }
      hi = next - 1;
    }
  }
  return null;
}

/** Ignores structure; only reached if everything else failed, so that chunking always terminates. */
function plainCut(text: string, cursor: Cursor, limit: number, partial: boolean): Cut {
  const hi = Math.min(partial ? text.length - 1 : text.length, cursor.pos + limit - prefixLength(cursor));
  const safe = safeEnd(text, cursor.pos, hi);
  const next = safe > cursor.pos ? safe : hi; // progress beats purity here: never loop forever
  return { end: Math.max(trimEnd(text, cursor.pos, next), cursor.pos + 1), next, fence: null };
}

/**
 * Whether cutting `line` in the middle (content up to `end`, rest from `next`) leaves a piece that would read
 * as a fence line on its own: an opener in prose ("~~~ is a fence" cut after "~~~"), or a closer of the
 * enclosing fence in code. Either would unbalance the segments.
 */
function splitMakesFence(
  text: string,
  line: Line,
  pos: number,
  end: number,
  next: number,
  fence: OpenFence | null,
  partial: boolean,
): boolean {
  // The rest of the last line of a partial text is not known yet: an empty or "`"/"~" start is suspect.
  const unknownRest = partial && line.end === text.length;
  return (
    pieceIsFence(text, Math.max(line.start, pos), end, fence, false) ||
    pieceIsFence(text, next, line.end, fence, unknownRest)
  );
}

function pieceIsFence(
  text: string,
  from: number,
  to: number,
  fence: OpenFence | null,
  unknown: boolean,
): boolean {
  let i = from;
  while (i < to && isWhitespace(text.charCodeAt(i))) i++;
  if (i >= to) return unknown; // nothing known of it yet: it may still turn into a fence line
  const c = text.charCodeAt(i);
  if (c !== 96 && c !== 126) return false; // fast path: no leading "`" or "~"
  if (unknown) {
    // Known to be a run of fewer than three (inline code, "~x"): no fence line, whatever follows.
    let run = i;
    while (run < to && text.charCodeAt(run) === c) run++;
    return run === to || run - i >= 3;
  }
  const piece = text.slice(from, to);
  return fence === null ? parseFenceOpener(piece) !== null : isFenceCloser(piece, fence.fence);
}

function prefixLength(cursor: Cursor): number {
  return cursor.fence ? cursor.fence.opener.length + 1 : 0;
}

/** The fence a line belongs to, as reopened if it is the one the segment starts inside. */
function fenceOf(line: Line, cursor: Cursor): OpenFence | null {
  if (line.fence !== null && cursor.fence !== null && line.fence.fence === cursor.fence.fence) {
    return line.kind === "open" ? line.fence : cursor.fence;
  }
  return line.fence;
}

/** True when the content ending at `end` closes a sentence: `.`, `!`, `?` or `…`, maybe followed by quotes. */
function endsSentence(text: string, lineStart: number, end: number): boolean {
  let j = end - 1;
  while (j > lineStart && end - j <= 3 && `"')]*_\`”’»`.includes(text[j]!)) j--;
  if (j < lineStart || !".!?…".includes(text[j]!)) return false;
  // "1. item" is a list marker, not the end of a sentence.
  return j - lineStart > 12 || !/^\s*\d+$/.test(text.slice(lineStart, j));
}

/** Index of the line containing `index` (binary search from line `from`). */
function lineAt(lines: readonly Line[], index: number, from: number): number {
  let lo = from;
  let hi = lines.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lines[mid]!.start <= index) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

let segmenter: Intl.Segmenter | null | undefined;

function graphemes(): Intl.Segmenter | null {
  if (segmenter === undefined) {
    segmenter =
      typeof Intl.Segmenter === "function"
        ? new Intl.Segmenter(undefined, { granularity: "grapheme" })
        : null;
  }
  return segmenter;
}

/**
 * Largest cut position in (lo, hi] that does not split a grapheme (emoji with modifiers, ZWJ sequences,
 * flags) or, failing that, a surrogate pair: a lone surrogate is invalid UTF-16 and platforms reject it.
 * Returns lo when there is none.
 */
function safeEnd(text: string, lo: number, hi: number): number {
  if (hi >= text.length) return text.length;
  let end = hi;
  if (isHighSurrogate(text.charCodeAt(end - 1)) && isLowSurrogate(text.charCodeAt(end))) end--;
  if (end <= lo) return lo;
  const seg = graphemes();
  if (seg !== null) {
    // Segmenting a small neighbourhood is enough; its first boundary is artificial and skipped.
    const from = Math.max(lo, end - 64);
    let best = -1;
    for (const { index } of seg.segment(text.slice(from, Math.min(text.length, end + 16)))) {
      const b = from + index;
      if (b > end) break;
      if (b > from) best = b;
    }
    if (best > lo) return best;
  }
  return end;
}

function trimEnd(text: string, lo: number, end: number): number {
  let e = end;
  while (e > lo && isWhitespace(text.charCodeAt(e - 1))) e--;
  return e;
}

function skipWhitespace(text: string, pos: number): number {
  let p = pos;
  while (p < text.length && isWhitespace(text.charCodeAt(p))) p++;
  return p;
}

// The characters findCut breaks at: a space or tab (words) and a line break.
function isBreakAt(text: string, k: number): boolean {
  const c = text.charCodeAt(k);
  return isBreakSpace(c) || c === 10;
}

function isBreakSpace(c: number): boolean {
  return c === 32 || c === 9;
}

/** Same set as `String.prototype.trim`, so segments trimmed here are trimmed by JS's definition too. */
function isWhitespace(c: number): boolean {
  return (
    (c >= 9 && c <= 13) ||
    c === 32 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}
