import { describe, expect, it } from "vitest";
import { chunkText } from "../src/chunk.js";
import { content, fencesBalanced, mulberry32 } from "./fences.js";

const WORDS = "the model replies with a fairly long answer about chunking é 😀 👍🏽".split(" ");
const INFOS = ["", "ts", "python", "js title=a.js"];

/** Random markdown: prose with sentences, long tokens and emoji, lists, and fenced code blocks. */
function randomMarkdown(rand: () => number, targetLength: number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const parts: string[] = [];
  let length = 0;
  while (length < targetLength) {
    let part: string;
    const r = rand();
    if (r < 0.2) {
      const marker = pick(["```", "~~~", "````"]);
      const lines: string[] = [];
      const n = 1 + Math.floor(rand() * 12);
      for (let i = 0; i < n; i++) {
        const indent = " ".repeat(Math.floor(rand() * 3) * 2);
        lines.push(rand() < 0.15 ? "" : `${indent}let v${i} = ${"x".repeat(Math.floor(rand() * 50))};`);
      }
      part = `${marker}${pick(INFOS)}\n${lines.join("\n")}\n${marker}`;
    } else if (r < 0.3) {
      part = `see https://example.com/${"p".repeat(Math.floor(rand() * 150))}`;
    } else if (r < 0.4) {
      part = Array.from(
        { length: 1 + Math.floor(rand() * 4) },
        (_, i) => `${i + 1}. item ${pick(WORDS)}`,
      ).join("\n");
    } else {
      const words: string[] = [];
      const n = 1 + Math.floor(rand() * 60);
      for (let i = 0; i < n; i++) words.push(pick(WORDS) + (rand() < 0.1 ? pick([".", "!", "?"]) : ""));
      part = words.join(rand() < 0.05 ? "  " : " ");
    }
    parts.push(part);
    length += part.length;
  }
  return parts.map((p, i) => (i === 0 ? p : (rand() < 0.6 ? "\n\n" : "\n") + p)).join("");
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function expectWellFormed(text: string, segments: string[], limit: number): void {
  for (const s of segments) {
    expect(s.length).toBeLessThanOrEqual(limit);
    expect(s.length).toBeGreaterThan(0);
    expect(s).toBe(s.trim());
    expect(fencesBalanced(s), s).toBe(true);
    expect(LONE_SURROGATE.test(s), s).toBe(false);
  }
  expect(content(segments.join("\n"))).toBe(content(text));
}

describe("chunkText", () => {
  it("rejects limits below 16", () => {
    expect(() => chunkText("hello", 15)).toThrow(RangeError);
    expect(() => chunkText("hello", 0)).toThrow(RangeError);
    expect(() => chunkText("hello", Number.NaN)).toThrow(RangeError);
    expect(chunkText("hello", 16)).toEqual(["hello"]);
  });

  it("returns [] for empty or whitespace text and one trimmed segment when it fits", () => {
    expect(chunkText("", 100)).toEqual([]);
    expect(chunkText(" \n\t\n ", 100)).toEqual([]);
    expect(chunkText("\n  Hello there.  \n\n", 100)).toEqual(["Hello there."]);
    expect(chunkText("x".repeat(40), 40)).toEqual(["x".repeat(40)]);
  });

  it("keeps every segment within the limit for many random texts", () => {
    const rand = mulberry32(0xc0ffee);
    for (let i = 0; i < 400; i++) {
      const limit = 16 + Math.floor(rand() * 300);
      const text = randomMarkdown(rand, 50 + Math.floor(rand() * 3000));
      expectWellFormed(text, chunkText(text, limit), limit);
    }
  });

  it("prefers a paragraph break over later sentence and word breaks", () => {
    const text = "Alpha beta gamma. Delta epsilon.\n\nZeta eta theta iota kappa.";
    expect(chunkText(text, 40)).toEqual(["Alpha beta gamma. Delta epsilon.", "Zeta eta theta iota kappa."]);
  });

  it("prefers a line break over sentence breaks", () => {
    const text = "Short line one\nNext one. Has two sentences. And more words here";
    expect(chunkText(text, 40)[0]).toBe("Short line one");
  });

  it("breaks at the last sentence end when there is no line break", () => {
    const text = "The quick fox jumps. It runs. Over the lazy dog again and again.";
    expect(chunkText(text, 40)).toEqual([
      "The quick fox jumps. It runs.",
      "Over the lazy dog again and again.",
    ]);
  });

  it("does not take a numbered-list marker for a sentence end", () => {
    const text = `1. ${"word ".repeat(20)}`;
    const [first] = chunkText(text, 40);
    expect(first!.length).toBeGreaterThan(30);
  });

  it("breaks at word boundaries when there is no sentence end", () => {
    const text = "one two three four five six seven eight nine ten eleven";
    expect(chunkText(text, 20)).toEqual(["one two three four", "five six seven eight", "nine ten eleven"]);
  });

  it("never breaks inside inline code, a link or bold that fits, in one long paragraph", () => {
    const text = Array.from(
      { length: 120 },
      (_, i) =>
        `run \`npm run thing --flag ${i}\` then see [the notes number ${i}](https://example.com/n/${i}), **twice as bold ${i}**,`,
    ).join(" ");
    const segments = chunkText(text, 2000);
    expect(segments.length).toBeGreaterThan(3);
    for (const s of segments) {
      expect(s.length).toBeLessThanOrEqual(2000);
      expect(s.split("`").length % 2).toBe(1); // an even number of backticks
      expect(s.split("**").length % 2).toBe(1);
      // Every bracket opens a whole link: "[label](url)" with both halves here.
      expect(s.match(/\[/g)?.length).toBe(s.match(/\[[^[\]]*\]\(https:[^\s)]*\)/g)?.length);
    }
    expect(segments.join(" ")).toBe(text);
  });

  it("still cuts a span longer than half a segment at a word, and stays linear on unclosed backtick runs", () => {
    const long = `\`${"word ".repeat(30).trim()}\``;
    const segments = chunkText(`intro ${long} outro`, 60);
    for (const s of segments) expect(s.length).toBeLessThanOrEqual(60);
    expect(segments.join(" ")).toBe(`intro ${long} outro`);
    const unclosed = Array.from({ length: 4000 }, (_, i) => `${"`".repeat((i % 7) + 1)}a b`).join(" ");
    const pieces = chunkText(unclosed, 2000);
    expect(pieces.join(" ").replace(/\s/g, "")).toBe(unclosed.replace(/\s/g, ""));
  });

  it("hard-cuts a token longer than a segment, without a tiny segment in front of it", () => {
    const url = `https://example.com/${"a".repeat(200)}?q=${"b".repeat(60)}`;
    const segments = chunkText(`see ${url} now`, 50);
    expect(segments[0]).toBe(`see ${url.slice(0, 46)}`);
    for (const s of segments) expect(s.length).toBeLessThanOrEqual(50);
    expect(segments.slice(0, -1).every((s) => s.length === 50)).toBe(true);
    expect(segments.join("").replace(/\s/g, "")).toBe(`see${url}now`);
  });

  it("still breaks before a token that fits in a segment of its own", () => {
    const token = "x".repeat(45);
    expect(chunkText(`see ${token} ${token}`, 50)).toEqual([`see ${token}`, token]);
    expect(chunkText(`see ${token}${token}`, 50)[0]).toBe(`see ${"x".repeat(46)}`);
    expect(chunkText(`a long enough lead of words ${"y".repeat(80)}`, 50)[0]).toBe(
      "a long enough lead of words",
    );
    // An earlier sentence end does not make the tiny segment either; a no-break space is no break.
    expect(chunkText(`Ok. So here: ${"x".repeat(120)}`, 50)[0]).toBe(`Ok. So here: ${"x".repeat(37)}`);
    expect(chunkText(`You said:\u00a0${"x".repeat(120)}`, 50)[0]).toHaveLength(50);
  });

  it("keeps a 3,000-char code block whole in a 9,000-char text at limit 4096", () => {
    const rand = mulberry32(42);
    const prose = (n: number): string => {
      const paragraphs: string[] = [];
      let len = 0;
      while (len < n) {
        const p = Array.from({ length: 40 }, () => WORDS[Math.floor(rand() * 8)]).join(" ");
        paragraphs.push(`${p}.`);
        len += p.length + 3;
      }
      return paragraphs.join("\n\n");
    };
    const codeLines: string[] = [];
    for (let i = 0; codeLines.join("\n").length < 3000; i++) {
      codeLines.push(i % 10 === 9 ? "" : `  const value${i} = compute(${i}, "${"z".repeat(i % 20)}");`);
    }
    const block = `\`\`\`ts\n${codeLines.join("\n")}\n\`\`\``;
    const text = `${prose(3000)}\n\n${block}\n\n${prose(3000)}`;
    expect(text.length).toBeGreaterThan(9000);
    const segments = chunkText(text, 4096);
    expectWellFormed(text, segments, 4096);
    expect(segments.some((s) => s.includes(block))).toBe(true);
  });

  it("splits a code block longer than the limit with close/reopen keeping the info string", () => {
    const code = Array.from({ length: 200 }, (_, i) => `    print("line ${i}")`);
    const text = `Here is the script:\n\n\`\`\`python\n${code.join("\n")}\n\`\`\`\n\nDone.`;
    const segments = chunkText(text, 500);
    expectWellFormed(text, segments, 500);
    expect(segments[0]).toBe("Here is the script:");
    const codeSegments = segments.filter((s) => s.includes("print("));
    expect(codeSegments.length).toBeGreaterThan(5);
    for (const s of codeSegments) {
      expect(s.startsWith("```python\n")).toBe(true);
      expect(s.includes("\n```")).toBe(true);
    }
    // Split between lines only, with indentation intact.
    const lines = new Set(segments.flatMap((s) => s.split("\n")));
    for (const line of code) expect(lines.has(line)).toBe(true);
    expect(segments.at(-1)!.endsWith("```\n\nDone.") || segments.at(-1) === "Done.").toBe(true);
  });

  it("splits a single code line longer than the limit inside the fence", () => {
    const text = `\`\`\`js\nconst data = [${"1234567, ".repeat(30)}];\n\`\`\``;
    const segments = chunkText(text, 60);
    expectWellFormed(text, segments, 60);
    for (const s of segments) expect(s.startsWith("```js\n") && s.endsWith("\n```")).toBe(true);
  });

  it("shortens a reopened opener whose info string would eat the limit", () => {
    const text = `\`\`\`typescript title="src/some/long/path/file.ts" showLineNumbers\n${"let a = 1;\n".repeat(30)}\`\`\``;
    const segments = chunkText(text, 60);
    expectWellFormed(text, segments, 60);
    expect(segments.slice(1).every((s) => s.startsWith("```typescript\n"))).toBe(true);
  });

  it("handles small limits like 40 sensibly", () => {
    const text =
      "# Title\n\nSome intro, then a list:\n- first point\n- second point\n\n```sh\nnpm i\nnpm test\n```";
    const segments = chunkText(text, 40);
    expectWellFormed(text, segments, 40);
    expect(segments).toEqual([
      "# Title",
      "Some intro, then a list:\n- first point",
      "- second point\n\n```sh\nnpm i\nnpm test\n```",
    ]);
  });

  it("never splits surrogate pairs or graphemes", () => {
    const smileys = "😀".repeat(100);
    const a = chunkText(smileys, 41);
    expectWellFormed(smileys, a, 41);
    expect(a.join("")).toBe(smileys);

    const family = "👨‍👩‍👧‍👦"; // 11 UTF-16 units joined by ZWJ
    const families = family.repeat(10);
    const b = chunkText(families, 30);
    for (const s of b) expect(s.length % family.length).toBe(0);
    expect(b.join("")).toBe(families);

    const flags = "🇫🇷🇩🇪🇯🇵".repeat(10);
    const c = chunkText(flags, 18);
    for (const s of c) expect(s.length % 4).toBe(0);
    expect(c.join("")).toBe(flags);
  });

  it("treats inline triple backticks as text, not a fence", () => {
    const text = `Use \`\`\`x\`\`\` sparingly. ${"word ".repeat(30)}`;
    const segments = chunkText(text, 50);
    expectWellFormed(text, segments, 50);
    expect(segments[0]).toBe("Use ```x``` sparingly.");
    expect(segments.some((s) => s.includes("\n"))).toBe(false);
  });
  it("never leaves a piece of prose that would read as a fence opener", () => {
    const segments = chunkText("aaaa bbbb cccc ~~~ dddd eeee", 16);
    expect(segments).toEqual(["aaaa bbbb", "cccc ~~~ dddd", "eeee"]);
  });

  it("treats lines that only look like fences inside a longer fence as code", () => {
    const inner = "```\nnot a closer\n```";
    const text = `~~~~md\n${`${inner}\n`.repeat(6)}~~~~`;
    const segments = chunkText(text, 60);
    expectWellFormed(text, segments, 60);
    for (const s of segments) expect(s.startsWith("~~~~md\n") && s.endsWith("\n~~~~")).toBe(true);
  });

  it("handles CRLF line endings", () => {
    const text = `Intro line.\r\n\r\n\`\`\`ts\r\n${"const a = 1;\r\n".repeat(8)}\`\`\`\r\n\r\nOutro.`;
    const segments = chunkText(text, 60);
    expectWellFormed(text, segments, 60);
    expect(segments[0]).toBe("Intro line.");
    expect(segments.filter((s) => s.startsWith("```ts")).length).toBeGreaterThan(1);
  });
});
