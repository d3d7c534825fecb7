// Helpers every markdown renderer (Telegram HTML, Slack mrkdwn, ...) needs once.

// marked leaves character references in text tokens (it expects a browser to decode them); chat
// platforms would show them literally after their own escaping, so renderers decode them first.
const NAMED: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: "\u00a0",
  copy: "©",
  reg: "®",
  trade: "™",
  hellip: "…",
  mdash: "—",
  ndash: "–",
  laquo: "«",
  raquo: "»",
  middot: "·",
  times: "×",
  deg: "°",
  euro: "€",
};

/** Decodes numeric and the common named character references (CommonMark semantics); others stay as written. */
export function decodeCharacterReferences(text: string): string {
  return text.replace(
    /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z][a-zA-Z0-9]{1,31}));/g,
    (m, dec, hex, name) => {
      if (typeof name === "string") return NAMED[name] ?? m;
      const code = typeof dec === "string" ? Number.parseInt(dec, 10) : Number.parseInt(String(hex), 16);
      const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
      return valid ? String.fromCodePoint(code) : m;
    },
  );
}

/**
 * Whether a link target a model wrote may become a link: one of `schemes` (e.g. `["https?://",
 * "mailto:"]`, as regex sources), no whitespace, no control characters. A model must never be
 * able to emit `javascript:`/`data:` links or a platform's internal forms.
 */
export function isSafeLinkTarget(href: string, schemes: readonly string[]): boolean {
  const h = href.trim();
  const hasControl = [...h].some((c) => c.charCodeAt(0) < 0x20);
  return new RegExp(`^(?:${schemes.join("|")})`, "i").test(h) && !/\s/.test(h) && !hasControl;
}

/** How a table column is aligned (marked's `align`). */
export type ColumnAlign = "center" | "left" | "right" | null;

/**
 * A table as aligned monospace text, for platforms without tables: the header,
 * a rule, then the rows; columns padded to their widest cell (in code points).
 */
export function monospaceTable(
  rows: ReadonlyArray<ReadonlyArray<string>>,
  align: ReadonlyArray<ColumnAlign> = [],
): string {
  const columns = Math.max(...rows.map((r) => r.length));
  const widths = Array.from({ length: columns }, (_, c) =>
    Math.max(1, ...rows.map((r) => codePoints(r[c] ?? ""))),
  );
  const line = (row: ReadonlyArray<string>) =>
    widths
      .map((w, c) => padCell(row[c] ?? "", w, align[c] ?? null))
      .join(" | ")
      .trimEnd();
  const [header = [], ...body] = rows;
  return [line(header), widths.map((w) => "-".repeat(w)).join("-+-"), ...body.map(line)].join("\n");
}

const codePoints = (s: string): number => [...s].length;

function padCell(text: string, size: number, align: ColumnAlign): string {
  const gap = size - codePoints(text);
  if (gap <= 0) return text;
  if (align === "right") return " ".repeat(gap) + text;
  if (align === "center") {
    const left = Math.floor(gap / 2);
    return " ".repeat(left) + text + " ".repeat(gap - left);
  }
  return text + " ".repeat(gap);
}

/** The marker of a list item in plain text: ☑ or ☐ for a task, `n. ` in an ordered list, `• ` otherwise. */
export function listItemMarker(
  list: { ordered: boolean; start?: number | "" | undefined },
  item: { task: boolean; checked?: boolean | undefined },
  index: number,
): string {
  if (item.task) return item.checked ? "☑ " : "☐ ";
  return list.ordered ? `${(typeof list.start === "number" ? list.start : 1) + index}. ` : "• ";
}

/** Rendered blocks joined by `separator`, the blank ones left out. */
export function joinBlocks(parts: ReadonlyArray<string>, separator: string): string {
  return parts.filter((part) => part.trim() !== "").join(separator);
}
