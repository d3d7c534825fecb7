import { z } from "zod";

// Slack's rich_text block (what its composer sends with every user message) -> Slack mrkdwn, the form
// `text` has, so a message whose `text` is empty reads like any other (mentions, links, the bot's own
// leading mention). Block kit reference: a `rich_text` block holds `rich_text_section`, `rich_text_list`
// (of sections), `rich_text_preformatted` and `rich_text_quote`; those hold elements: text, link, user,
// usergroup, channel, team, broadcast, emoji, date, color. Read leniently: an element or block that does
// not match is skipped, never the message.

const Element = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  url: z.string().optional(),
  user_id: z.string().optional(),
  usergroup_id: z.string().optional(),
  channel_id: z.string().optional(),
  team_id: z.string().optional(),
  range: z.string().optional(),
  name: z.string().optional(),
  unicode: z.string().optional(),
  value: z.string().optional(),
  timestamp: z.number().optional(),
  fallback: z.string().optional(),
});
type Element = z.infer<typeof Element>;

const Container = z.looseObject({
  type: z.string(),
  elements: z.array(z.unknown()).catch([]),
  style: z.string().optional(),
  indent: z.number().int().nonnegative().optional(),
  offset: z.number().int().nonnegative().optional(),
});
type Container = z.infer<typeof Container>;

const RichTextBlock = z.looseObject({ type: z.literal("rich_text"), elements: z.array(z.unknown()) });

/** Escapes what mrkdwn reserves (`&`, `<`, `>`), as Slack does in `text`. */
const escapeMrkdwn = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** A standard emoji's code points (`1f44d`, `1f469-200d-1f4bb`) as the character, else undefined. */
function emojiChar(unicode: string | undefined): string | undefined {
  if (!unicode || !/^[0-9a-f]+(-[0-9a-f]+)*$/i.test(unicode)) return undefined;
  try {
    return String.fromCodePoint(...unicode.split("-").map((hex) => Number.parseInt(hex, 16)));
  } catch {
    return undefined;
  }
}

/** One inline element as mrkdwn. */
function inline(e: Element): string {
  switch (e.type) {
    case "text":
      return escapeMrkdwn(e.text ?? "");
    case "link": {
      if (!e.url) return escapeMrkdwn(e.text ?? "");
      const url = escapeMrkdwn(e.url);
      return e.text && e.text !== e.url ? `<${url}|${escapeMrkdwn(e.text)}>` : `<${url}>`;
    }
    case "user":
      return e.user_id ? `<@${e.user_id}>` : "";
    case "usergroup":
      return e.usergroup_id ? `<!subteam^${e.usergroup_id}>` : "";
    case "channel":
      return e.channel_id ? `<#${e.channel_id}>` : "";
    case "broadcast":
      return e.range ? `<!${e.range}>` : "";
    case "emoji":
      return emojiChar(e.unicode) ?? (e.name ? `:${e.name}:` : "");
    case "date":
      return escapeMrkdwn(
        e.fallback ?? (e.timestamp !== undefined ? new Date(e.timestamp * 1000).toISOString() : ""),
      );
    case "team":
      return escapeMrkdwn(e.team_id ?? "");
    case "color":
      return escapeMrkdwn(e.value ?? "");
    default:
      // An element this reader does not know: its text, when it has one.
      return escapeMrkdwn(e.text ?? "");
  }
}

function inlines(raw: unknown[]): string {
  return raw
    .map((r) => Element.safeParse(r))
    .map((r) => (r.success ? inline(r.data) : ""))
    .join("");
}

/** A list's items, one a line: `- item` or `1. item`, indented two spaces a level. */
function list(c: Container): string {
  const pad = "  ".repeat(c.indent ?? 0);
  return c.elements
    .map((item, i) => {
      const section = Container.safeParse(item);
      const text = section.success ? inlines(section.data.elements).trimEnd() : "";
      const mark = c.style === "ordered" ? `${(c.offset ?? 0) + i + 1}.` : "-";
      return `${pad}${mark} ${text}`;
    })
    .join("\n");
}

/** One block-level element (section, list, preformatted, quote) as mrkdwn. */
function container(c: Container): string {
  switch (c.type) {
    case "rich_text_list":
      return list(c);
    case "rich_text_preformatted":
      return `\`\`\`\n${inlines(c.elements).replace(/\n$/, "")}\n\`\`\``;
    case "rich_text_quote":
      return inlines(c.elements)
        .replace(/\n$/, "")
        .split("\n")
        .map((line) => `&gt; ${line}`)
        .join("\n");
    default:
      return inlines(c.elements);
  }
}

/** Joins block-level parts, each starting on its own line. */
function joinLines(parts: string[]): string {
  return parts.reduce((all, part) => (all === "" || all.endsWith("\n") ? all + part : `${all}\n${part}`), "");
}

/**
 * The text of a message's `rich_text` blocks as Slack mrkdwn (`<@U1>`, `<url|label>`, `&lt;` …), what
 * `text` would have said; "" when there are none. Other block types (a bot's sections) are not text a
 * user typed and are left out.
 */
export function richTextToMrkdwn(blocks: unknown[] | undefined): string {
  const parts: string[] = [];
  for (const raw of blocks ?? []) {
    const block = RichTextBlock.safeParse(raw);
    if (!block.success) continue;
    for (const rawPart of block.data.elements) {
      const part = Container.safeParse(rawPart);
      if (part.success) parts.push(container(part.data));
    }
  }
  return joinLines(parts).trim();
}
