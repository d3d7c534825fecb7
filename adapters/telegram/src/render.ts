import {
  decodeCharacterReferences,
  isSafeLinkTarget,
  joinBlocks,
  listItemMarker,
  monospaceTable,
} from "@hub/core";
import { getDefaults, Lexer, type MarkedToken, type Token, type Tokens } from "marked";

// Markdown (as models write it) -> Telegram's HTML parse mode. We walk marked's token tree instead of
// rewriting the markdown with regexes, so every tag we open is closed by construction and every piece
// of text goes through one escaper: the output is always balanced, parseable Telegram HTML.

type Mode = "html" | "plain";

interface Ctx {
  mode: Mode;
  /** Inside a link: Telegram's text_link cannot contain code/other links, so those become text. */
  inLink: boolean;
  /** Telegram cannot nest blockquotes; inner quotes are flattened. */
  inQuote: boolean;
}

const HTML: Ctx = { mode: "html", inLink: false, inQuote: false };
const PLAIN: Ctx = { mode: "plain", inLink: false, inQuote: false };

/** Escapes text for Telegram HTML (its parser needs only &, <, > escaped outside attributes). */
function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function escapeAttr(text: string): string {
  return escapeHtml(text).replace(/"/g, "&quot;");
}

const esc = (ctx: Ctx, text: string): string => (ctx.mode === "html" ? escapeHtml(text) : text);

/** Wraps already-rendered content in a tag (nothing in plain mode; no empty tags). */
function wrap(ctx: Ctx, tag: string, inner: string, attrs = ""): string {
  if (ctx.mode === "plain" || inner === "") return inner;
  return `<${tag}${attrs}>${inner}</${tag}>`;
}

/** Only these schemes become links: a model must not be able to emit javascript:/data: hrefs. */
const isSafeHref = (href: string): boolean => isSafeLinkTarget(href, ["https?://", "tg:", "mailto:"]);

function renderInline(tokens: readonly Token[] | undefined, ctx: Ctx): string {
  if (!tokens) return "";
  let out = "";
  for (const token of tokens) out += renderInlineToken(token, ctx);
  return out;
}

function renderInlineToken(token: Token, ctx: Ctx): string {
  // MarkedToken is the closed union; casting narrows the switch (Generic would swallow every case).
  const t = token as MarkedToken;
  switch (t.type) {
    case "text":
      return t.tokens ? renderInline(t.tokens, ctx) : esc(ctx, decodeCharacterReferences(t.text));
    case "escape":
      return esc(ctx, t.text);
    case "strong":
      return wrap(ctx, "b", renderInline(t.tokens, ctx));
    case "em":
      return wrap(ctx, "i", renderInline(t.tokens, ctx));
    case "del":
      return wrap(ctx, "s", renderInline(t.tokens, ctx));
    case "codespan":
      return ctx.inLink ? esc(ctx, t.text) : wrap(ctx, "code", esc(ctx, t.text));
    case "br":
      return "\n";
    case "link":
      return renderLink(t, ctx);
    case "image":
      return renderImage(t, ctx);
    case "checkbox":
      // Rendered as the list item's marker instead.
      return "";
    case "html":
      // Raw HTML from the model is shown as text, never interpreted.
      return esc(ctx, t.text);
    default:
      return renderFallback(token, ctx);
  }
}

function renderLink(t: Tokens.Link, ctx: Ctx): string {
  // Autolinks keep their literal text; a written [text](href) destination may hold entities.
  const href = t.autolink ? t.href : decodeCharacterReferences(t.href);
  const inner = { ...ctx, inLink: true };
  const label = t.autolink ? esc(ctx, t.text) : renderInline(t.tokens, inner);
  if (ctx.inLink || !isSafeHref(href)) return label === "" ? "" : label;
  if (ctx.mode === "plain") {
    if (label === "" || label === href || `mailto:${label}` === href) return href.replace(/^mailto:/i, "");
    return `${label} (${href})`;
  }
  return `<a href="${escapeAttr(href)}">${label === "" ? escapeHtml(href) : label}</a>`;
}

function renderImage(t: Tokens.Image, ctx: Ctx): string {
  const alt = renderInline(t.tokens, PLAIN).trim() || t.text.trim();
  const href = decodeCharacterReferences(t.href);
  if (ctx.inLink || !isSafeHref(href)) return esc(ctx, alt);
  if (ctx.mode === "plain") return alt === "" ? href : `${alt} (${href})`;
  return `<a href="${escapeAttr(href)}">${escapeHtml(alt === "" ? href : alt)}</a>`;
}

/** Unknown tokens (e.g. from extensions): their children if any, else their source as text. */
function renderFallback(token: Token, ctx: Ctx): string {
  if ("tokens" in token && Array.isArray(token.tokens)) return renderInline(token.tokens, ctx);
  return esc(ctx, typeof token.raw === "string" ? token.raw : "");
}

function renderBlocks(tokens: readonly Token[], ctx: Ctx, separator: string): string {
  return joinBlocks(
    tokens.map((token) => renderBlock(token, ctx)),
    separator,
  );
}

function renderBlock(token: Token, ctx: Ctx): string {
  const t = token as MarkedToken;
  switch (t.type) {
    case "space":
    case "def":
      return "";
    case "paragraph":
      return renderInline(t.tokens, ctx);
    case "text":
      // Block-level text appears in tight list items.
      return t.tokens ? renderInline(t.tokens, ctx) : esc(ctx, decodeCharacterReferences(t.text));
    case "heading":
      return wrap(ctx, "b", renderInline(t.tokens, ctx));
    case "code":
      return renderCode(t, ctx);
    case "blockquote": {
      const inner = renderBlocks(t.tokens, { ...ctx, inQuote: true }, "\n\n");
      return ctx.inQuote ? inner : wrap(ctx, "blockquote", inner);
    }
    case "list":
      return renderList(t, ctx);
    case "table":
      return renderTable(t, ctx);
    case "hr":
      return "———";
    case "html":
      return esc(ctx, t.text.replace(/\s+$/, ""));
    default:
      return renderInlineToken(token, ctx);
  }
}

function renderCode(t: Tokens.Code, ctx: Ctx): string {
  const code = t.text.replace(/\n+$/, "");
  if (code === "") return "";
  if (ctx.mode === "plain") return code;
  // The info string may carry more than a language ("ts title=x"); keep a safe first word.
  const lang =
    (t.lang ?? "")
      .trim()
      .split(/\s+/)[0]
      ?.replace(/[^\w+#.-]/g, "") ?? "";
  const open = lang === "" ? "<code>" : `<code class="language-${escapeAttr(lang)}">`;
  return `<pre>${open}${escapeHtml(code)}</code></pre>`;
}

/**
 * Indents every continuation line by `prefix`, except lines inside <pre> (code must stay verbatim).
 * Safe to scan for "<pre>" because all text we emit is escaped: only our own tags contain "<".
 */
function indentContinuation(text: string, prefix: string): string {
  let depth = 0;
  let out = "";
  let i = 0;
  while (i < text.length) {
    if (text.startsWith("<pre>", i)) depth++;
    else if (text.startsWith("</pre>", i)) depth--;
    const c = text[i] ?? "";
    out += c;
    i++;
    if (c === "\n" && depth === 0 && i < text.length && text[i] !== "\n") out += prefix;
  }
  return out;
}

function renderList(list: Tokens.List, ctx: Ctx): string {
  return list.items
    .map((item, k) => {
      const body = renderBlocks(item.tokens, ctx, "\n");
      return `${listItemMarker(list, item, k)}${indentContinuation(body, "  ")}`.trimEnd();
    })
    .join("\n");
}

function renderTable(table: Tokens.Table, ctx: Ctx): string {
  const cellText = (cell: Tokens.TableCell) =>
    renderInline(cell.tokens, PLAIN)
      .replace(/\s*\n\s*/g, " ")
      .trim();
  const rows = [table.header.map(cellText), ...table.rows.map((row) => row.map(cellText))];
  const text = monospaceTable(rows, table.align);
  return ctx.mode === "plain" ? text : `<pre>${escapeHtml(text)}</pre>`;
}

function lex(markdown: string): Token[] | undefined {
  try {
    // Fresh defaults: immune to marked.use() calls made elsewhere in the process.
    return Lexer.lex(markdown, { ...getDefaults(), gfm: true, breaks: false });
  } catch {
    return undefined;
  }
}

function finish(text: string): string {
  return text.replace(/^\n+/, "").trimEnd();
}

/**
 * Renders model markdown as Telegram HTML (`parse_mode: "HTML"`): strong and headings -> <b>, em -> <i>,
 * del -> <s>, `code` -> <code>, fenced code -> <pre><code class="language-x">, links -> <a> (only
 * http/https/tg/mailto), images -> links, quotes -> <blockquote>, lists -> "•"/"1."/"☐"/"☑" lines,
 * tables -> aligned <pre>, raw HTML -> escaped text. The output is always balanced, with every
 * `&`, `<`, `>` in text escaped, and has no trailing whitespace.
 */
export function renderTelegramHtml(markdown: string): string {
  const tokens = lex(markdown);
  if (!tokens) return finish(escapeHtml(markdown));
  return finish(renderBlocks(tokens, HTML, "\n\n"));
}

/**
 * The number of characters Telegram counts against its 4096 limit for this HTML: the text left after
 * removing tags and decoding entities (UTF-16 code units, which is never less than Telegram's count).
 */
export function telegramVisibleLength(html: string): number {
  // Telegram decodes only numeric references and these four names; each counts as its character.
  const basic: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };
  const text = html
    .replace(/<[^>]*>/g, "")
    .replace(/&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|(lt|gt|amp|quot));/g, (m, dec, hex, name) => {
      if (typeof name === "string") return basic[name] ?? m;
      const code = typeof dec === "string" ? Number.parseInt(dec, 10) : Number.parseInt(String(hex), 16);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
    });
  return text.length;
}

/**
 * The markdown as plain text (formatting removed, links as "text (url)", tables aligned, raw HTML kept
 * literally): what to resend without parse_mode when Telegram answers "can't parse entities".
 */
export function plainTextFallback(markdown: string): string {
  const tokens = lex(markdown);
  if (!tokens) return finish(markdown);
  return finish(renderBlocks(tokens, PLAIN, "\n\n"));
}
