import { readMrkdwn } from "@hub/fakes";
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../../test/support/prng.js";
import { escapeMrkdwn, renderMrkdwn } from "../src/render.js";

describe("renderMrkdwn", () => {
  it.each([
    ["**bold** and *italic* and ~~gone~~", "*bold* and _italic_ and ~gone~"],
    ["`a < b && c`", "`a &lt; b &amp;&amp; c`"],
    ["# Title\n\ntext", "*Title*\n\ntext"],
    ["[docs](https://example.com/a?b=1&c=2)", "<https://example.com/a?b=1&amp;c=2|docs>"],
    ["<https://example.com>", "<https://example.com>"],
    ["[x](javascript:alert(1))", "x"],
    ["![logo](https://example.com/l.png)", "<https://example.com/l.png|logo>"],
    ["> quoted\n> twice", "> quoted\ntwice".replace("\ntwice", "\n> twice")],
    ["- one\n- two", "• one\n• two"],
    ["3. three\n4. four", "3. three\n4. four"],
    ["- [x] done\n- [ ] todo", "☑ done\n☐ todo"],
    ["Tom & Jerry <3", "Tom &amp; Jerry &lt;3"],
    ["&copy; &amp; &#65;", "© &amp; A"],
    ["<b>html</b>", "&lt;b&gt;html&lt;/b&gt;"],
  ])("renders %j", (markdown, expected) => {
    expect(renderMrkdwn(markdown)).toBe(expected);
  });

  it("renders a fenced code block verbatim except for escaping, and breaks up fences inside it", () => {
    expect(renderMrkdwn("```ts\nif (a < b) x = '```';\n```")).toBe(
      "```\nif (a &lt; b) x = '``\u200b`';\n```",
    );
  });

  it("renders a table as an aligned code block", () => {
    expect(renderMrkdwn("| a | bb |\n|---|---|\n| 1 | 2 |")).toBe("```\na | bb\n--+---\n1 | 2\n```");
  });

  it("neutralizes mentions: Slack's <!channel>, <@U…>, <#C…> forms and bare @here/@channel/@everyone", () => {
    const out = renderMrkdwn("Hey <!channel> <!here> <@U123> <#C123|general> @here @channel @everyone");
    expect(out).not.toMatch(/<[!@#]/);
    expect(out).not.toMatch(/@(here|channel|everyone)/);
    expect(readMrkdwn(out)).toMatchObject({ wellFormed: true });
    expect(readMrkdwn(out).text.replace(/\u2060/g, "")).toBe(
      "Hey <!channel> <!here> <@U123> <#C123|general> @here @channel @everyone",
    );
  });

  it("keeps a link label from closing the link early", () => {
    expect(renderMrkdwn("[a|b>c](https://e.com/x|y)")).toBe("<https://e.com/x%7Cy|a¦b&gt;c>");
  });

  it("escapes only &, < and > (and breaks broadcast mentions)", () => {
    expect(escapeMrkdwn("a & b < c > d *e* @here")).toBe("a &amp; b &lt; c &gt; d *e* @\u2060here");
  });
});

const PIECES = [
  "**",
  "*",
  "_",
  "~~",
  "`",
  "```",
  "\n",
  "\n\n",
  "> ",
  "- ",
  "1. ",
  "# ",
  "[",
  "](",
  ")",
  "<",
  ">",
  "&",
  "&amp;",
  "&#0;",
  "<!channel>",
  "<@U1>",
  "<#C1|x>",
  "@here",
  "@everyone",
  "|",
  "http://x.y/",
  "javascript:",
  "mailto:a@b.c",
  "word",
  " ",
  "日本",
  "😀",
  "\\",
  "| a | b |\n|---|---|\n",
  "<b>",
  "![i](https://a/b)",
];

describe("renderMrkdwn fuzz", () => {
  it("always produces well-formed mrkdwn with no live mention, for 3,000 random inputs", () => {
    const random = mulberry32(20_261_130);
    for (let n = 0; n < 3000; n++) {
      const parts = Array.from(
        { length: 1 + Math.floor(random() * 30) },
        () => PIECES[Math.floor(random() * PIECES.length)],
      );
      const markdown = parts.join("");
      const out = renderMrkdwn(markdown);
      const view = readMrkdwn(out);
      const live =
        /<[!@#]/.test(out) ||
        /@(here|channel|everyone)/i.test(out.replace(/<(?:https?:|mailto:)[^>]*>/g, ""));
      // Outside link URLs (where `@everyone` is just part of an address), no mention or broadcast survives.
      if (!view.wellFormed || live) {
        throw new Error(
          `case ${n}: ${JSON.stringify(markdown)} -> ${JSON.stringify(out)}: ${view.problem ?? "live mention"}`,
        );
      }
    }
  });
});
