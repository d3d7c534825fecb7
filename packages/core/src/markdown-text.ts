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
