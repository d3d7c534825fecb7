import { describe, expect, it } from "vitest";
import { renderWhatsApp } from "../src/index.js";

describe("markdown to WhatsApp formatting", () => {
  it.each([
    ["**bold** and __bold__", "*bold* and *bold*"],
    ["*italic* and _italic_", "_italic_ and _italic_"],
    ["~~gone~~", "~gone~"],
    ["use `npm test`", "use `npm test`"],
    ["# Title\n\ntext", "*Title*\n\ntext"],
    ["[docs](https://example.com/a)", "docs (https://example.com/a)"],
    ["<https://example.com>", "https://example.com"],
    ["- one\n- two", "• one\n• two"],
    ["1. one\n2. two", "1. one\n2. two"],
    ["> quoted\n> more", "> quoted\n> more"],
    ["a & b < c", "a & b < c"],
    ["** not bold **", "** not bold **"],
  ])("%j -> %j", (markdown, expected) => {
    expect(renderWhatsApp(markdown)).toBe(expected);
  });

  it("keeps code blocks verbatim in ``` fences (no formatting inside)", () => {
    expect(renderWhatsApp("```ts\nconst a = **b** * c_d;\n```")).toBe("```\nconst a = **b** * c_d;\n```");
  });

  it("renders tables as a monospace block", () => {
    expect(renderWhatsApp("| a | bb |\n|---|---|\n| 1 | 2 |")).toBe("```\na | bb\n--+---\n1 | 2\n```");
  });
});
