import { describe, expect, it } from "vitest";
import { plainTextFallback, renderTelegramHtml, telegramVisibleLength } from "../src/render.js";

const r = renderTelegramHtml;

describe("renderTelegramHtml: mappings", () => {
  it("separates paragraphs with a blank line and keeps soft line breaks", () => {
    expect(r("one\ntwo\n\n\nthree")).toBe("one\ntwo\n\nthree");
  });

  it("renders headings as bold", () => {
    expect(r("# Title\n\n### Sub *x*")).toBe("<b>Title</b>\n\n<b>Sub <i>x</i></b>");
  });

  it("renders strong, em, del and code spans", () => {
    expect(r("**b** __b2__ *i* _i2_ ~~s~~ `c`")).toBe(
      "<b>b</b> <b>b2</b> <i>i</i> <i>i2</i> <s>s</s> <code>c</code>",
    );
  });

  it("nests emphasis", () => {
    expect(r("***both*** and **bold _italic ~~gone~~_**")).toBe(
      "<i><b>both</b></i> and <b>bold <i>italic <s>gone</s></i></b>",
    );
  });

  it("renders fenced code with and without a language", () => {
    expect(r("```ts\nconst a = 1;\n```")).toBe('<pre><code class="language-ts">const a = 1;</code></pre>');
    expect(r("```\nplain\n```")).toBe("<pre><code>plain</code></pre>");
    expect(r("    indented")).toBe("<pre><code>indented</code></pre>");
  });

  it("escapes < and & inside code", () => {
    expect(r("```html\n<div>a && b</div>\n```")).toBe(
      '<pre><code class="language-html">&lt;div&gt;a &amp;&amp; b&lt;/div&gt;</code></pre>',
    );
    expect(r("use `a<b && c>d`")).toBe("use <code>a&lt;b &amp;&amp; c&gt;d</code>");
  });

  it("renders safe links and escapes the href", () => {
    expect(r('[docs](https://x.dev/?a=1&b="2")')).toBe(
      '<a href="https://x.dev/?a=1&amp;b=&quot;2&quot;">docs</a>',
    );
    expect(r("[me](tg://user?id=1) [mail](mailto:a@b.c) <https://auto.dev>")).toBe(
      '<a href="tg://user?id=1">me</a> <a href="mailto:a@b.c">mail</a> ' +
        '<a href="https://auto.dev">https://auto.dev</a>',
    );
  });

  it("drops unsafe or relative hrefs but keeps the text", () => {
    expect(r("[click](javascript:alert(1)) [rel](/local) [data](data:text/html,x)")).toBe("click rel data");
  });

  it("renders code inside a link as text (Telegram cannot nest code in links)", () => {
    expect(r("[`npm i`](https://npmjs.com)")).toBe('<a href="https://npmjs.com">npm i</a>');
  });

  it("renders images as links to the image", () => {
    expect(r("![a chart](https://img.dev/c.png)")).toBe('<a href="https://img.dev/c.png">a chart</a>');
    expect(r("![](https://img.dev/c.png)")).toBe('<a href="https://img.dev/c.png">https://img.dev/c.png</a>');
    expect(r("![x](javascript:1)")).toBe("x");
  });

  it("renders blockquotes and flattens nested ones", () => {
    expect(r("> quoted **text**\n> more")).toBe("<blockquote>quoted <b>text</b>\nmore</blockquote>");
    expect(r("> outer\n>\n> > inner")).toBe("<blockquote>outer\n\ninner</blockquote>");
  });

  it("renders bullet, ordered, nested and task lists", () => {
    expect(r("- a\n- b\n  - c\n    - d")).toBe("• a\n• b\n  • c\n    • d");
    expect(r("3. three\n4. four")).toBe("3. three\n4. four");
    expect(r("- [x] done\n- [ ] todo")).toBe("☑ done\n☐ todo");
  });

  it("keeps code blocks inside list items unindented", () => {
    expect(r("1. run\n\n   ```sh\n   npm i\n   ls\n   ```")).toBe(
      '1. run\n  <pre><code class="language-sh">npm i\nls</code></pre>',
    );
  });

  it("renders hr and hard breaks", () => {
    expect(r("above\n\n---\n\nbelow")).toBe("above\n\n———\n\nbelow");
    expect(r("line  \nbreak")).toBe("line\nbreak");
  });

  it("renders tables as aligned monospace text", () => {
    expect(r("| name | n |\n|:-----|--:|\n| apple | **3** |\n| fig | 12 |")).toBe(
      "<pre>name  |  n\n------+---\napple |  3\nfig   | 12</pre>",
    );
  });

  it("shows raw HTML as escaped text", () => {
    expect(r("<script>alert('x')</script>")).toBe("&lt;script&gt;alert('x')&lt;/script&gt;");
    expect(r("a <b>b</b> c")).toBe("a &lt;b&gt;b&lt;/b&gt; c");
    expect(r("<div>\nblock\n</div>")).toBe("&lt;div&gt;\nblock\n&lt;/div&gt;");
  });

  it("escapes & and < in text, decoding entities the markdown wrote", () => {
    expect(r("Tom & Jerry < Spike > 1")).toBe("Tom &amp; Jerry &lt; Spike &gt; 1");
    expect(r("AT&amp;T &copy; &#169;")).toBe("AT&amp;T © ©");
  });

  it("trims trailing whitespace", () => {
    expect(r("text   \n\n\n")).toBe("text");
    expect(r("")).toBe("");
  });
});

describe("telegramVisibleLength", () => {
  it("counts text without tags, entities as one character", () => {
    expect(telegramVisibleLength('<b>a &amp; b</b> <a href="https://x.dev">link</a>')).toBe(10);
    expect(telegramVisibleLength("&lt;&gt;&quot;&#33;")).toBe(4);
    expect(telegramVisibleLength(r("**x** `<`"))).toBe(3);
  });
});

describe("plainTextFallback", () => {
  it("removes formatting and keeps link targets", () => {
    expect(plainTextFallback("# T\n\n**b** _i_ `c < d` [x](https://x.dev) <b>raw</b> & more")).toBe(
      "T\n\nb i c < d x (https://x.dev) <b>raw</b> & more",
    );
    expect(plainTextFallback("- [x] a\n- b\n\n```\ncode\n```")).toBe("☑ a\n• b\n\ncode");
  });
});

// ---------------------------------------------------------------------------------------------
// Property check: whatever the markdown, the output is HTML Telegram accepts.

const OPEN_TAG = /^<(b|i|s|code|pre|blockquote)>|^<a href="[^"<>]*">|^<code class="language-[^"<>]*">/;
const CLOSE_TAG = /^<\/(b|i|s|code|pre|blockquote|a)>/;
const ENTITY = /^&(?:amp|lt|gt|quot);/;

/** Returns a problem description, or undefined when `html` is balanced Telegram HTML. */
function checkTelegramHtml(html: string): string | undefined {
  const stack: string[] = [];
  for (let i = 0; i < html.length; ) {
    const rest = html.slice(i);
    if (html[i] === "&") {
      const m = ENTITY.exec(rest);
      if (!m) return `bare & at ${i}`;
      i += m[0].length;
    } else if (html[i] === "<") {
      const close = CLOSE_TAG.exec(rest);
      if (close) {
        const open = stack.pop();
        if (open !== close[1]) return `</${close[1]}> closes <${open ?? "nothing"}> at ${i}`;
        i += close[0].length;
        continue;
      }
      const open = OPEN_TAG.exec(rest);
      if (!open) return `raw < at ${i}: ${rest.slice(0, 20)}`;
      const tag = open[1] ?? (open[0].startsWith("<a") ? "a" : "code");
      if (tag === "a" && stack.includes("a")) return `nested link at ${i}`;
      if (stack.includes("code") || (stack.at(-1) === "pre" && tag !== "code"))
        return `tag inside code at ${i}`;
      stack.push(tag);
      i += open[0].length;
    } else {
      i++;
    }
  }
  return stack.length > 0 ? `unclosed ${stack.join(",")}` : undefined;
}

/** Deterministic PRNG (mulberry32) so failures are reproducible. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FRAGMENTS = [
  "**",
  "*",
  "_",
  "__",
  "~~",
  "~",
  "`",
  "```",
  "```js\n",
  "\n```\n",
  "# ",
  "## ",
  "> ",
  "> > ",
  "- ",
  "  - ",
  "1. ",
  "- [ ] ",
  "- [x] ",
  "\n",
  "\n\n",
  "  \n",
  "---\n",
  "| a | b |\n|---|:-:|\n| 1 | 2 |\n",
  "|",
  "[",
  "]",
  "(",
  ")",
  "[link](https://ok.dev/?a=1&b=2)",
  "[bad](javascript:alert(1))",
  "[rel](/x)",
  "![img](https://i.dev/p.png)",
  "<https://auto.dev>",
  "www.example.com",
  "<script>alert(1)</script>",
  "<b>",
  "</i>",
  "<div>",
  "<",
  ">",
  "&",
  "&amp;",
  "&lt;",
  "&#60;",
  "&bogus;",
  '"',
  "\\*",
  "\\<",
  "word",
  "more words",
  "a<b",
  "x&&y",
  "😀",
  "mañana",
  "    indented code\n",
];

describe("renderTelegramHtml: always valid Telegram HTML", () => {
  it("holds for a random-ish corpus of broken markdown", () => {
    const random = prng(20240601);
    const samples = [
      "**unbalanced bold",
      "stray ` backtick and *half",
      "<b>raw html</b> & <i>more",
      "[x](javascript:alert(1)) [y](JAVASCRIPT:alert(1)) [z](  https://ok.dev  )",
      "```\nunclosed fence <tag> &",
      "> quote with ```code\n> inside",
      "- list with <html> & `code`\n  - nested **bold",
    ];
    for (let n = 0; n < 1500; n++) {
      const parts: string[] = [];
      const count = 1 + Math.floor(random() * 25);
      for (let k = 0; k < count; k++) parts.push(FRAGMENTS[Math.floor(random() * FRAGMENTS.length)] ?? "");
      samples.push(parts.join(random() < 0.5 ? "" : " "));
    }
    for (const markdown of samples) {
      const html = renderTelegramHtml(markdown);
      const problem = checkTelegramHtml(html);
      expect(problem, `markdown: ${JSON.stringify(markdown)}\nhtml: ${JSON.stringify(html)}`).toBeUndefined();
      expect(html).toBe(html.trimEnd());
      expect(html).not.toMatch(/href="(?!https?:\/\/|tg:|mailto:)/i);
      expect(telegramVisibleLength(html)).toBeLessThanOrEqual(html.length);
    }
  });
});
