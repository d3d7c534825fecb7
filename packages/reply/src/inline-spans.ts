/**
 * Inline markdown spans a word break must not fall inside: a code span (`` `npm run x` ``), a link
 * (`[label](url)`) and bold (`**…**`). Each segment is rendered on its own, so a span cut in two
 * reaches the platform as stray backticks or raw link syntax, and every later span of the message
 * reads inverted. Pure, no I/O.
 */

/** A span of one line, [start, end) in the text. */
export interface InlineSpan {
  readonly start: number;
  readonly end: number;
}

/**
 * The spans that open in [from, startsBefore) and end by `to` (the line's end), no longer than
 * `maxLength`, in order and not overlapping. A longer span cannot be kept whole anyway, so breaks
 * inside it stay allowed; its closer is not even looked for (the scan stays linear in the window).
 */
export function inlineSpans(
  text: string,
  from: number,
  to: number,
  startsBefore: number,
  maxLength: number,
): InlineSpan[] {
  const spans: InlineSpan[] = [];
  let k = from;
  while (k < Math.min(to, startsBefore)) {
    const end = spanEndAt(text, k, Math.min(to, k + maxLength));
    if (end === undefined) {
      k += text[k] === "`" ? runLength(text, k, to, "`") : 1;
      continue;
    }
    spans.push({ start: k, end });
    k = end;
  }
  return spans;
}

/** Where the span opening at `k` ends, or undefined when none opens there. */
function spanEndAt(text: string, k: number, to: number): number | undefined {
  const c = text[k];
  if (c === "`") return codeSpanEnd(text, k, to);
  if (c === "[") return linkEnd(text, k, to);
  if (c === "*" && text[k + 1] === "*") {
    const close = text.indexOf("**", k + 2);
    return close > k + 2 && close + 2 <= to ? close + 2 : undefined;
  }
  return undefined;
}

// CommonMark: a run of n backticks is closed by the next run of exactly n.
function codeSpanEnd(text: string, k: number, to: number): number | undefined {
  const n = runLength(text, k, to, "`");
  for (let i = k + n; i < to; ) {
    if (text[i] !== "`") {
      i++;
      continue;
    }
    const m = runLength(text, i, to, "`");
    if (m === n) return i + m;
    i += m;
  }
  return undefined;
}

// `[label](url)`: no brackets in the label, no whitespace in the url.
function linkEnd(text: string, k: number, to: number): number | undefined {
  for (let i = k + 1; i < to; i++) {
    const c = text[i];
    if (c === "[") return undefined;
    if (c !== "]") continue;
    if (text[i + 1] !== "(") return undefined;
    for (let j = i + 2; j < to; j++) {
      if (text[j] === ")") return j + 1;
      if (/\s/.test(text[j]!)) return undefined;
    }
    return undefined;
  }
  return undefined;
}

function runLength(text: string, k: number, to: number, char: string): number {
  let n = 0;
  while (k + n < to && text[k + n] === char) n++;
  return n;
}

/** Walks spans in order: `inside(k)` for increasing k says whether k falls strictly inside one. */
export class SpanCursor {
  #i = 0;
  constructor(private readonly spans: readonly InlineSpan[]) {}

  inside(k: number): boolean {
    while (this.#i < this.spans.length && this.spans[this.#i]!.end <= k) this.#i++;
    const span = this.spans[this.#i];
    return span !== undefined && span.start < k;
  }
}
