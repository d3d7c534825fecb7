import type { MessageEntity } from "grammy/types";

// ---------------------------------------------------------------------------------------------
// Telegram HTML parse mode

/** The visible text and entities of a message after Telegram parsed its HTML. */
export type TelegramHtmlResult =
  | { ok: true; text: string; entities: MessageEntity[] }
  | { ok: false; description: string };

const ALLOWED_TAGS = new Set([
  "b",
  "strong",
  "i",
  "em",
  "u",
  "ins",
  "s",
  "strike",
  "del",
  "code",
  "pre",
  "a",
  "blockquote",
  "tg-spoiler",
  "span",
  "tg-emoji",
]);

const NAMED_ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

/** Decodes the entity starting at `i` (which is "&"); undefined when it is not a valid one. */
function decodeEntity(s: string, i: number): { char: string; end: number } | undefined {
  const m = /^&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]+));/.exec(s.slice(i, i + 12));
  if (!m) return undefined;
  if (m[3] !== undefined) {
    // Telegram supports only these four named entities.
    const char = NAMED_ENTITIES[m[3]];
    return char === undefined ? undefined : { char, end: i + m[0].length };
  }
  const code = m[1] !== undefined ? Number.parseInt(m[1], 10) : Number.parseInt(m[2] ?? "", 16);
  if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return undefined;
  return { char: String.fromCodePoint(code), end: i + m[0].length };
}

const isSpace = (c: string | undefined): boolean => c === " " || c === "\t" || c === "\n" || c === "\r";

interface OpenTag {
  tag: string;
  arg: string;
  offset: number;
  /** For <pre>: the language taken from a nested <code class="language-x">. */
  language?: string;
  /** True for a <code> directly inside <pre> (merged into the pre entity, like Telegram). */
  mergedIntoPre?: boolean;
}

/**
 * Parses Telegram-flavoured HTML like the Bot API's `parse_mode: "HTML"` (a port of TDLib's parser):
 * returns the visible text and entities, or the error description Telegram would give (without
 * the "Bad Request: can't parse entities: " prefix). Stricter than Telegram in one way: a bare "&"
 * that does not start an entity is rejected (the Bot API docs require escaping it; the server
 * tolerates it), so renderers that forget to escape "&" are caught.
 */
export function parseTelegramHtml(html: string): TelegramHtmlResult {
  const byteOffset = (i: number) => Buffer.byteLength(html.slice(0, i), "utf8");
  const fail = (description: string): TelegramHtmlResult => ({ ok: false, description });
  const n = html.length;
  const stack: OpenTag[] = [];
  const entities: MessageEntity[] = [];
  let text = "";
  let i = 0;
  while (i < n) {
    const c = html[i];
    if (c === "&") {
      const entity = decodeEntity(html, i);
      if (!entity) return fail(`Unescaped "&" at byte offset ${byteOffset(i)}`);
      text += entity.char;
      i = entity.end;
      continue;
    }
    if (c !== "<") {
      text += c;
      i++;
      continue;
    }
    const begin = i;
    i++;
    if (html[i] !== "/") {
      let j = i;
      while (j < n && !isSpace(html[j]) && html[j] !== ">") j++;
      if (j >= n) return fail(`Unclosed start tag at byte offset ${byteOffset(begin)}`);
      const tag = html.slice(i, j).toLowerCase();
      if (!ALLOWED_TAGS.has(tag)) {
        return fail(`Unsupported start tag "${tag}" at byte offset ${byteOffset(begin)}`);
      }
      i = j;
      let arg = "";
      // Attributes: name="value", name='value', name=token, or bare `expandable` on blockquote.
      while (html[i] !== ">") {
        while (i < n && isSpace(html[i])) i++;
        if (html[i] === ">") break;
        const nameStart = i;
        while (i < n && !isSpace(html[i]) && html[i] !== "=" && html[i] !== ">") i++;
        const name = html.slice(nameStart, i).toLowerCase();
        if (name === "") {
          return fail(`Empty attribute name in the tag "${tag}" at byte offset ${byteOffset(begin)}`);
        }
        while (i < n && isSpace(html[i])) i++;
        if (html[i] !== "=") {
          if (tag === "blockquote" && name === "expandable") {
            arg = "expandable";
            continue;
          }
          if (i >= n) return fail(`Unclosed start tag at byte offset ${byteOffset(begin)}`);
          return fail(
            `Expected equal sign in declaration of an attribute of the tag "${tag}" at byte offset ` +
              `${byteOffset(begin)}`,
          );
        }
        i++;
        while (i < n && isSpace(html[i])) i++;
        if (i >= n) return fail(`Unclosed start tag "${tag}" at byte offset ${byteOffset(begin)}`);
        let value = "";
        const quote = html[i];
        if (quote === '"' || quote === "'") {
          i++;
          while (i < n && html[i] !== quote) {
            if (html[i] === "&") {
              const entity = decodeEntity(html, i);
              if (!entity) return fail(`Unescaped "&" at byte offset ${byteOffset(i)}`);
              value += entity.char;
              i = entity.end;
              continue;
            }
            value += html[i];
            i++;
          }
          if (i < n) i++;
        } else {
          const tokenStart = i;
          while (i < n && /[A-Za-z0-9.-]/.test(html[i] ?? "")) i++;
          value = html.slice(tokenStart, i).toLowerCase();
          if (i < n && !isSpace(html[i]) && html[i] !== ">") {
            return fail(`Unexpected end of name token at byte offset ${byteOffset(tokenStart)}`);
          }
        }
        if (i >= n) return fail(`Unclosed start tag at byte offset ${byteOffset(begin)}`);
        if (tag === "a" && name === "href") arg = value;
        else if (tag === "code" && name === "class" && value.startsWith("language-")) arg = value.slice(9);
        else if (tag === "span" && name === "class" && value.startsWith("tg-")) arg = value.slice(3);
        else if (tag === "tg-emoji" && name === "emoji-id") arg = value;
        else if (tag === "blockquote" && name === "expandable") arg = "expandable";
      }
      i++;
      if (tag === "span" && arg !== "spoiler") {
        return fail(`Tag "span" must have class "tg-spoiler" at byte offset ${byteOffset(begin)}`);
      }
      const open: OpenTag = { tag, arg, offset: text.length };
      const parent = stack.at(-1);
      // <pre><code class="language-x"> is one pre entity with a language, as on Telegram.
      if (tag === "code" && parent?.tag === "pre" && parent.offset === text.length) {
        open.mergedIntoPre = true;
        if (arg !== "" && parent.language === undefined) parent.language = arg;
      }
      stack.push(open);
      continue;
    }
    // End tag.
    if (stack.length === 0) return fail(`Unexpected end tag at byte offset ${byteOffset(begin)}`);
    i++;
    let j = i;
    while (j < n && !isSpace(html[j]) && html[j] !== ">") j++;
    const endName = html.slice(i, j).toLowerCase();
    while (j < n && isSpace(html[j])) j++;
    if (html[j] !== ">") return fail(`Unclosed end tag at byte offset ${byteOffset(begin)}`);
    const open = stack.pop()!;
    if (endName !== "" && endName !== open.tag) {
      return fail(
        `Unmatched end tag at byte offset ${byteOffset(begin)}, ` +
          `expected "</${open.tag}>", found "</${endName}>"`,
      );
    }
    i = j + 1;
    const entity = toEntity(open, text.length - open.offset);
    if (entity) entities.push(entity);
  }
  const last = stack.at(-1);
  if (last) return fail(`Can't find end tag corresponding to start tag "${last.tag}"`);
  return { ok: true, ...trimFormatted(text, entities) };
}

function toEntity(open: OpenTag, length: number): MessageEntity | undefined {
  if (length <= 0 || open.mergedIntoPre) return undefined;
  const { offset } = open;
  switch (open.tag) {
    case "b":
    case "strong":
      return { type: "bold", offset, length };
    case "i":
    case "em":
      return { type: "italic", offset, length };
    case "u":
    case "ins":
      return { type: "underline", offset, length };
    case "s":
    case "strike":
    case "del":
      return { type: "strikethrough", offset, length };
    case "tg-spoiler":
    case "span":
      return { type: "spoiler", offset, length };
    case "code":
      return { type: "code", offset, length };
    case "pre":
      return open.language === undefined
        ? { type: "pre", offset, length }
        : { type: "pre", offset, length, language: open.language };
    case "blockquote":
      return { type: open.arg === "expandable" ? "expandable_blockquote" : "blockquote", offset, length };
    case "a":
      // Telegram drops a link without a usable href but keeps its text.
      return open.arg === "" ? undefined : { type: "text_link", offset, length, url: open.arg };
    case "tg-emoji":
      return { type: "custom_emoji", offset, length, custom_emoji_id: open.arg };
    default:
      return undefined;
  }
}

/** Telegram strips surrounding whitespace from message text; entities shift and clip with it. */
export function trimFormatted(
  text: string,
  entities: MessageEntity[],
): { text: string; entities: MessageEntity[] } {
  const start = text.length - text.trimStart().length;
  const trimmed = text.trim();
  const end = start + trimmed.length;
  const out: MessageEntity[] = [];
  for (const e of entities) {
    const from = Math.max(e.offset, start);
    const to = Math.min(e.offset + e.length, end);
    if (to > from) out.push({ ...e, offset: from - start, length: to - from });
  }
  out.sort((a, b) => a.offset - b.offset || b.length - a.length);
  return { text: trimmed, entities: out };
}
