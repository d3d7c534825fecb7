import { joinBlocks, listItemMarker, monospaceTable } from "@hub/core";
import { getDefaults, Lexer, type MarkedToken, type Token, type Tokens } from "marked";

// Markdown (as models write it) -> WhatsApp's formatting: *bold*, _italic_, ~strike~, `code` and
// ``` blocks. We walk marked's token tree, so a marker we open is closed by construction; WhatsApp
// has no escape character, so text is passed as is.

function renderInline(tokens: readonly Token[] | undefined): string {
  if (!tokens) return "";
  let out = "";
  for (const token of tokens) out += renderInlineToken(token);
  return out;
}

/** Wraps non-empty content in a marker pair; WhatsApp ignores markers around leading/trailing spaces. */
function wrap(marker: string, inner: string): string {
  const core = inner.trim();
  if (core === "") return inner;
  const lead = inner.slice(0, inner.indexOf(core));
  const tail = inner.slice(inner.indexOf(core) + core.length);
  return `${lead}${marker}${core}${marker}${tail}`;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", apos: "'" };

function decode(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39|apos);/g, (_, name: string) => ENTITIES[name] ?? "");
}

function renderInlineToken(token: Token): string {
  const t = token as MarkedToken;
  switch (t.type) {
    case "text":
      return t.tokens ? renderInline(t.tokens) : decode(t.text);
    case "escape":
      return decode(t.text);
    case "strong":
      return wrap("*", renderInline(t.tokens));
    case "em":
      return wrap("_", renderInline(t.tokens));
    case "del":
      return wrap("~", renderInline(t.tokens));
    case "codespan":
      return t.text === "" ? "" : `\`${decode(t.text)}\``;
    case "br":
      return "\n";
    case "link": {
      const label = renderInline(t.tokens);
      return t.autolink || label === t.href || label === "" ? t.href : `${label} (${t.href})`;
    }
    case "image":
      return t.text ? `${t.text} (${t.href})` : t.href;
    case "checkbox":
      return "";
    case "html":
      return t.text;
    default:
      if ("tokens" in token && Array.isArray(token.tokens)) return renderInline(token.tokens);
      return typeof token.raw === "string" ? token.raw : "";
  }
}

function renderBlocks(tokens: readonly Token[], separator: string): string {
  return joinBlocks(tokens.map(renderBlock), separator);
}

function renderBlock(token: Token): string {
  const t = token as MarkedToken;
  switch (t.type) {
    case "space":
    case "def":
      return "";
    case "paragraph":
      return renderInline(t.tokens);
    case "text":
      return t.tokens ? renderInline(t.tokens) : decode(t.text);
    case "heading":
      return wrap("*", renderInline(t.tokens));
    case "code": {
      const code = t.text.replace(/\n+$/, "");
      return code === "" ? "" : `\`\`\`\n${code}\n\`\`\``;
    }
    case "blockquote":
      return renderBlocks(t.tokens, "\n\n")
        .split("\n")
        .map((line) => `> ${line}`)
        .join("\n");
    case "list":
      return renderList(t);
    case "table":
      return renderTable(t);
    case "hr":
      return "———";
    case "html":
      return t.text.replace(/\s+$/, "");
    default:
      return renderInlineToken(token);
  }
}

function renderList(list: Tokens.List): string {
  return list.items
    .map((item, k) => {
      const body = renderBlocks(item.tokens, "\n").replace(/\n(?=.)/g, "\n  ");
      return `${listItemMarker(list, item, k)}${body}`.trimEnd();
    })
    .join("\n");
}

/** Tables become a monospace block (WhatsApp has no tables). */
function renderTable(table: Tokens.Table): string {
  const cell = (c: Tokens.TableCell) => renderInline(c.tokens).replace(/\s+/g, " ").trim();
  const text = monospaceTable([table.header.map(cell), ...table.rows.map((row) => row.map(cell))]);
  return `\`\`\`\n${text}\n\`\`\``;
}

/**
 * Renders model markdown in WhatsApp's formatting: strong and headings ->
 * `*bold*`, em -> `_italic_`, del -> `~strike~`, inline code -> `` `code` ``,
 * fenced code and tables -> ``` blocks, links -> "text (url)", quotes -> "> ",
 * lists -> "•"/"1." lines. No trailing whitespace.
 */
export function renderWhatsApp(markdown: string): string {
  let tokens: Token[];
  try {
    // Fresh defaults: immune to marked.use() calls made elsewhere in the process.
    tokens = Lexer.lex(markdown, { ...getDefaults(), gfm: true, breaks: false });
  } catch {
    return markdown.trimEnd();
  }
  return renderBlocks(tokens, "\n\n").replace(/^\n+/, "").trimEnd();
}
