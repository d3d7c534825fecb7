import { describe, expect, it } from "vitest";
import { BlockStreamer, type BlockStreamerOptions } from "../src/block-stream.js";
import { chunkText } from "../src/chunk.js";
import { content, fencesBalanced, mulberry32 } from "./fences.js";

const WORDS = ["the", "model", "streams", "a", "long", "answer.", "Then", "more!", "é", "😀", "👨‍👩‍👧‍👦"];

/** Random markdown with paragraphs, single line breaks, long tokens and fences that contain blank lines. */
function randomMarkdown(rand: () => number, targetLength: number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  let text = "";
  while (text.length < targetLength) {
    const r = rand();
    if (r < 0.15) {
      const marker = pick(["```", "~~~"]);
      const lines = Array.from({ length: 1 + Math.floor(rand() * 10) }, (_, i) =>
        rand() < 0.25 ? "" : `  step(${i}); ${"y".repeat(Math.floor(rand() * 40))}`,
      );
      // A fence must start and end on lines of its own.
      if (text !== "" && !text.endsWith("\n")) text += "\n";
      text += `${marker}${pick(["", "ts", "py"])}\n${lines.join("\n")}\n${marker}\n`;
    } else if (r < 0.22) {
      text += `link https://example.com/${"q".repeat(Math.floor(rand() * 120))}`;
    } else {
      text += Array.from({ length: 1 + Math.floor(rand() * 40) }, () => pick(WORDS)).join(" ");
    }
    text += pick(["\n\n", "\n\n", "\n", "\n\n\n", " "]);
  }
  return text;
}

/** Streams `text` in deltas whose sizes come from `size`, then flushes. */
function stream(text: string, options: BlockStreamerOptions, size: () => number): string[] {
  const streamer = new BlockStreamer(options);
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    const n = Math.max(1, size());
    out.push(...streamer.push(text.slice(i, i + n)));
    i += n;
  }
  out.push(...streamer.flush());
  return out;
}

describe("BlockStreamer", () => {
  it("emits a block as soon as its paragraph ends", () => {
    const s = new BlockStreamer({});
    expect(s.push("Hello ")).toEqual([]);
    expect(s.push("world.\n")).toEqual([]);
    expect(s.push("\nSecond")).toEqual(["Hello world."]);
    expect(s.push(" paragraph.\n\n\n")).toEqual(["Second paragraph."]);
    expect(s.push("Tail")).toEqual([]);
    expect(s.flush()).toEqual(["Tail"]);
    expect(s.flush()).toEqual([]);
  });

  it("does not split a fence that contains a blank line", () => {
    const s = new BlockStreamer({});
    const fence = "```py\ndef f():\n\n    return 1\n```";
    const out = [...s.push(`Intro\n\n${fence}\n\nAfter`), ...s.flush()];
    expect(out).toEqual(["Intro", fence, "After"]);
  });

  it("holds a fence open across deltas until it closes", () => {
    const s = new BlockStreamer({});
    expect(s.push("~~~\na\n\n")).toEqual([]);
    expect(s.push("b\n~~~\n")).toEqual([]);
    expect(s.push("\n")).toEqual(["~~~\na\n\nb\n~~~"]);
  });

  it("merges blocks shorter than minChars with the next one", () => {
    const s = new BlockStreamer({ minChars: 20 });
    expect(s.push("Hi.\n\nOk.\n\nThis one is long enough.\n\n")).toEqual([
      "Hi.\n\nOk.\n\nThis one is long enough.",
    ]);
    expect(s.push("Bye.")).toEqual([]);
    expect(s.flush()).toEqual(["Bye."]);
  });

  it("does not merge past maxChars", () => {
    const s = new BlockStreamer({ minChars: 10, maxChars: 30 });
    const long = "twenty-eight characters long";
    expect([...s.push(`Hi.\n\n${long}\n\n`), ...s.flush()]).toEqual(["Hi.", long]);
  });

  it("cuts a paragraph longer than maxChars at the best break", () => {
    const s = new BlockStreamer({ maxChars: 40 });
    const text = "First sentence is here. Second one follows it. Third sentence ends the paragraph.";
    const out = [...s.push(text), ...s.flush()];
    expect(out[0]).toBe("First sentence is here.");
    for (const block of out) expect(block.length).toBeLessThanOrEqual(40);
    expect(content(out.join("\n\n"))).toBe(content(text));
  });

  it("streams a word longer than a block after a few words as full blocks, not a tiny one first", () => {
    // The offline model echoing a 4,096-character word: "You said:" alone was a message of its own.
    const text = `You said: ${"x".repeat(4096)}\n\nI am the offline model.`;
    const byWord = stream(text, { maxChars: 3000 }, () => 7);
    expect(byWord.map((b) => b.length)).toEqual([3000, 1106, 23]);
    expect(byWord[0]?.startsWith("You said: xxx")).toBe(true);
    expect(stream(text, { maxChars: 3000 }, () => text.length)).toEqual(byWord);
  });

  it("closes and reopens a fence cut by maxChars, keeping its info string", () => {
    const code = Array.from({ length: 30 }, (_, i) => `let x${i} = ${i};`).join("\n");
    const text = `Code:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nDone.`;
    const out = stream(text, { maxChars: 120 }, () => 7);
    for (const block of out) {
      expect(block.length).toBeLessThanOrEqual(120);
      expect(fencesBalanced(block), block).toBe(true);
    }
    const codeBlocks = out.filter((b) => b.includes("let x"));
    expect(codeBlocks.length).toBeGreaterThan(2);
    for (const block of codeBlocks) expect(block.startsWith("```ts\n") && block.endsWith("\n```")).toBe(true);
    expect(out[0]).toBe("Code:");
    expect(out.at(-1)).toBe("Done.");
    expect(content(out.join("\n\n"))).toBe(content(text));
  });

  it("gives the same blocks for random delta sizes as for the whole text", () => {
    const rand = mulberry32(7);
    for (let i = 0; i < 150; i++) {
      const text = randomMarkdown(rand, Math.floor(rand() * 3000));
      const options = { minChars: rand() < 0.5 ? 1 : Math.floor(rand() * 80), maxChars: 100_000 };
      const whole = stream(text, options, () => text.length);
      expect(stream(text, options, () => 1 + Math.floor(rand() * 25))).toEqual(whole);
      if (i % 10 === 0) expect(stream(text, options, () => 1)).toEqual(whole);
      expect(content(whole.join("\n\n"))).toBe(content(text));
      for (const block of whole) expect(fencesBalanced(block), block).toBe(true);
    }
  });

  it("keeps blocks within maxChars, balanced and complete, whatever the deltas", () => {
    const rand = mulberry32(2024);
    for (let i = 0; i < 150; i++) {
      const text = randomMarkdown(rand, Math.floor(rand() * 4000));
      const options = { minChars: Math.floor(rand() * 30), maxChars: 16 + Math.floor(rand() * 400) };
      const whole = stream(text, options, () => text.length);
      // Cuts are made on what the buffer held when it overflowed, so even they do not depend on deltas.
      expect(stream(text, options, () => 1 + Math.floor(rand() * 40))).toEqual(whole);
      for (const block of whole) {
        expect(block.length).toBeLessThanOrEqual(options.maxChars);
        expect(block).toBe(block.trim());
        expect(block.length).toBeGreaterThan(0);
        expect(fencesBalanced(block), block).toBe(true);
      }
      expect(content(whole.join("\n\n"))).toBe(content(text));
    }
  });

  it.each([
    ["inline code", "`inline code inline code inline code inline code inline code inline code`"],
    ["a link", `[a short label here](https://example.com/${"p".repeat(150)})`],
    ["bold", "**bold words bold words bold words bold words bold words bold words bold**"],
  ])("does not cut inside %s that opens before an overflow cut and closes after the limit", (_, span) => {
    // The span straddles the 3,000th character: the cut must come before it, as chunkText's does.
    const text = `${"w ".repeat(1490)}${span} end`;
    const whole = stream(text, { maxChars: 3000 }, () => text.length);
    const rand = mulberry32(3);
    expect(whole).toEqual(chunkText(text, 3000));
    expect(stream(text, { maxChars: 3000 }, () => 1 + Math.floor(rand() * 25))).toEqual(whole);
    expect(whole).toHaveLength(2);
    expect(whole[1]?.startsWith(span)).toBe(true);
  });

  it("cuts a long paragraph with inline spans as chunkText does, whatever the deltas", () => {
    const rand = mulberry32(99);
    const pieces = [
      "word",
      "a",
      "longer-word",
      "`npm run x`",
      "[label](https://example.com/path)",
      "**bold text**",
    ];
    for (let i = 0; i < 60; i++) {
      const maxChars = 200 + Math.floor(rand() * 800);
      const count = Math.floor((maxChars * (1 + rand() * 4)) / 6);
      const words = Array.from({ length: count }, () => pieces[Math.floor(rand() * pieces.length)]);
      // Now and then a span about as long as half a block, so it straddles cuts.
      for (let w = 0; w < words.length; w += 40 + Math.floor(rand() * 80))
        words[w] = `\`${"code ".repeat(Math.floor(maxChars / 12)).trim()}\``;
      const text = words.join(" ");
      const whole = stream(text, { maxChars }, () => text.length);
      expect(whole).toEqual(chunkText(text, maxChars));
      expect(stream(text, { maxChars }, () => 1 + Math.floor(rand() * 40))).toEqual(whole);
    }
  });

  it("rejects invalid options", () => {
    expect(() => new BlockStreamer({ maxChars: 15 })).toThrow(RangeError);
    expect(() => new BlockStreamer({ minChars: 50, maxChars: 40 })).toThrow(RangeError);
    expect(() => new BlockStreamer({ minChars: -1 })).toThrow(RangeError);
  });
});
