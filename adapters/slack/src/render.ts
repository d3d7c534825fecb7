import {
  decodeCharacterReferences,
  isSafeLinkTarget,
  joinBlocks,
  listItemMarker,
  monospaceTable,
} from "@hub/core";
import { getDefaults, Lexer, type MarkedToken, type Token, type Tokens } from "marked";

// Markdown (as models write it) -> Slack mrkdwn. We walk marked's token tree rather than rewriting the
// markdown with regexes, so every piece of text goes through one escaper (`&`, `<`, `>`, the only
// characters Slack wants escaped) and the only `<...>` constructs in the output are links we built from
// safe URLs: a model can never emit `<!channel>`, `<@U123>` or `<#C123>`. Bare `@here`/`@channel`/
// `@everyone` get a zero-width joiner after the `@` so Slack never turns them into notifications.

/** Slack's recommended limit for a message's `text` (longer ones are truncated past 40,000). */
export const SLACK_TEXT_LIMIT = 4000;

interface Ctx {
  /** Inside a link label: links and code cannot nest in Slack, so they become text. */
  inLink: boolean;
}

const TOP: Ctx = { inLink: false };
// `@here` anywhere, except as an address's domain (`ops@here.com`).
const BROADCAST = /@(here|channel|everyone)(?!\.\w)/gi;

/**
 * Escapes text for mrkdwn (`&`, `<`, `>`), neutralizes bare broadcast mentions, and breaks up
 * literal ``` runs (Slack would open a code block there) with a zero-width space.
 */
export function escapeMrkdwn(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(BROADCAST, "@\u2060$1")
    .replace(/``(?=`)/g, "``\u200b");
}

/** Only these schemes become links: a model must not be able to emit javascript:/data: hrefs. */
const isSafeHref = (href: string): boolean => isSafeLinkTarget(href, ["https?://", "mailto:"]);

/** A URL inside `<url|label>`: `|` and `>` would end it early and backticks open code, so they are percent-encoded. */
function linkUrl(href: string): string {
  return href
    .trim()
    .replace(/&/g, "&amp;")
    .replace(/</g, "%3C")
    .replace(/>/g, "%3E")
    .replace(/\|/g, "%7C")
    .replace(/`/g, "%60");
}

/** Wraps rendered text in a mrkdwn marker; whitespace stays outside (Slack ignores `* x*`). */
function mark(marker: string, inner: string): string {
  const m = /^(\s*)([\s\S]*?)(\s*)$/.exec(inner);
  const core = m?.[2] ?? "";
  if (core === "") return inner;
  return `${m?.[1] ?? ""}${marker}${core}${marker}${m?.[3] ?? ""}`;
}

function renderInline(tokens: readonly Token[] | undefined, ctx: Ctx): string {
  if (!tokens) return "";
  let out = "";
  for (const token of tokens) out += renderInlineToken(token, ctx);
  // Neighbouring tokens (an escaped `\@` or backtick next to text) must not join into a broadcast or a fence.
  return out.replace(BROADCAST, "@\u2060$1").replace(/``(?=`)/g, "``\u200b");
}

function renderInlineToken(token: Token, ctx: Ctx): string {
  // MarkedToken is the closed union; casting narrows the switch (Generic would swallow every case).
  const t = token as MarkedToken;
  switch (t.type) {
    case "text":
      return t.tokens ? renderInline(t.tokens, ctx) : escapeMrkdwn(decodeCharacterReferences(t.text));
    case "escape":
      return escapeMrkdwn(t.text);
    case "strong":
      return mark("*", renderInline(t.tokens, ctx));
    case "em":
      return mark("_", renderInline(t.tokens, ctx));
    case "del":
      return mark("~", renderInline(t.tokens, ctx));
    case "codespan":
      return renderCodespan(decodeCharacterReferences(t.text), ctx);
    case "br":
      return "\n";
    case "link":
      return renderLink(t, ctx);
    case "image":
      return renderImage(t, ctx);
    case "checkbox":
      return "";
    case "html":
      // Raw HTML from the model is shown as text, never interpreted.
      return escapeMrkdwn(t.text);
    default:
      if ("tokens" in token && Array.isArray(token.tokens)) return renderInline(token.tokens, ctx);
      return escapeMrkdwn(typeof token.raw === "string" ? token.raw : "");
  }
}

function renderCodespan(code: string, ctx: Ctx): string {
  // Slack has no way to escape a backtick inside inline code; such code is shown as plain text.
  if (ctx.inLink || code.includes("`") || code.trim() === "") return escapeMrkdwn(code);
  return `\`${escapeMrkdwn(code)}\``;
}

function renderLink(t: Tokens.Link, ctx: Ctx): string {
  const href = t.autolink ? t.href : decodeCharacterReferences(t.href);
  const label = t.autolink ? escapeMrkdwn(t.text) : renderInline(t.tokens, { inLink: true });
  if (ctx.inLink || !isSafeHref(href)) return label;
  if (label === "" || t.autolink) return `<${linkUrl(href)}>`;
  // A label cannot contain `>`; escaping already turned any into `&gt;`.
  return `<${linkUrl(href)}|${label.replace(/\|/g, "¦")}>`;
}

function renderImage(t: Tokens.Image, ctx: Ctx): string {
  const alt = t.text.trim();
  const href = decodeCharacterReferences(t.href);
  if (ctx.inLink || !isSafeHref(href)) return escapeMrkdwn(alt);
  return alt === "" ? `<${linkUrl(href)}>` : `<${linkUrl(href)}|${escapeMrkdwn(alt).replace(/\|/g, "¦")}>`;
}

function renderBlocks(tokens: readonly Token[], separator: string, inList = false): string {
  return joinBlocks(
    tokens.map((token) => renderBlock(token, inList)),
    separator,
  );
}

function renderBlock(token: Token, inList: boolean): string {
  const t = token as MarkedToken;
  switch (t.type) {
    case "space":
    case "def":
      return "";
    case "paragraph":
      return renderInline(t.tokens, TOP);
    case "text":
      return t.tokens ? renderInline(t.tokens, TOP) : escapeMrkdwn(decodeCharacterReferences(t.text));
    case "heading":
      return mark("*", renderInline(t.tokens, TOP));
    case "code":
      return renderCode(t.text);
    case "blockquote":
      // A quote must start its line; inside a list item (after the marker) it is drawn with a bar instead.
      return inList
        ? renderBlocks(t.tokens, "\n\n", true).replace(/^/gm, "┃ ")
        : quote(renderBlocks(t.tokens, "\n\n"));
    case "list":
      return renderList(t);
    case "table":
      return renderTable(t);
    case "hr":
      return "———";
    case "html":
      return escapeMrkdwn(t.text.replace(/\s+$/, ""));
    default:
      return renderInlineToken(token, TOP);
  }
}

function renderCode(text: string): string {
  const code = text.replace(/\n+$/, "");
  if (code === "") return "";
  // escapeMrkdwn breaks up any fence inside the code, so it cannot close the block early.
  return `\`\`\`\n${escapeMrkdwn(code)}\n\`\`\``;
}

/** Prefixes every line with `> ` (Slack quotes are per line; nested quotes flatten into one). */
function quote(text: string): string {
  return text
    .split("\n")
    .map((line) => (line.startsWith("> ") ? line : `> ${line}`))
    .join("\n");
}

/** Indents continuation lines of a list item; code block lines stay verbatim. */
function indent(text: string, prefix: string): string {
  let inCode = false;
  return text
    .split("\n")
    .map((line, i) => {
      const fence = line === "```";
      const out = i === 0 || inCode || fence || line === "" ? line : prefix + line;
      if (fence) inCode = !inCode;
      return out;
    })
    .join("\n");
}

function renderList(list: Tokens.List): string {
  return list.items
    .map((item, k) => {
      return `${listItemMarker(list, item, k)}${indent(renderBlocks(item.tokens, "\n", true), "    ")}`.trimEnd();
    })
    .join("\n");
}

/** Tables become an aligned code block: Slack has no tables, monospace keeps the columns. */
function renderTable(table: Tokens.Table): string {
  const cell = (c: Tokens.TableCell) => decodeCharacterReferences(c.text).replace(/\s+/g, " ").trim();
  return renderCode(monospaceTable([table.header.map(cell), ...table.rows.map((row) => row.map(cell))]));
}

/**
 * Renders model markdown as Slack mrkdwn: strong and headings -> `*x*`, em -> `_x_`, del -> `~x~`,
 * code -> backticks and fences, links -> `<url|label>` (http, https, mailto only), images -> links,
 * quotes -> `> ` lines, lists -> `•`/`1.`/`☐`/`☑` lines, tables -> aligned code blocks, raw HTML ->
 * escaped text. Every `&`, `<`, `>` of the text is escaped; no mention or broadcast survives.
 */
export function renderMrkdwn(markdown: string): string {
  let tokens: Token[];
  try {
    // Fresh defaults: immune to marked.use() calls made elsewhere in the process.
    tokens = Lexer.lex(markdown, { ...getDefaults(), gfm: true, breaks: false });
  } catch {
    return escapeMrkdwn(markdown).trim();
  }
  return renderBlocks(tokens, "\n\n").replace(/^\n+/, "").trimEnd();
}
