import { describe, expect, it } from "vitest";
import { renderTelegramHtml } from "../src/render.js";
import { MeasuredRenders } from "../src/rendered.js";

describe("MeasuredRenders", () => {
  const texts = [
    "**bold** and `code`",
    "plain text",
    "- a\n- b\n\n> quote & <tag>",
    "| a | b |\n|---|---|\n| 1 | 2 |",
  ];

  it("gives the send exactly the render of the text, measured or not", () => {
    const renders = new MeasuredRenders();
    for (const text of texts) expect(renders.measure(text)).toBe(renderTelegramHtml(text));
    for (const text of texts) expect(renders.take(text)).toBe(renderTelegramHtml(text));
    expect(renders.take("never measured *x*")).toBe(renderTelegramHtml("never measured *x*"));
  });

  it("keeps a render until its send takes it", () => {
    const renders = new MeasuredRenders();
    renders.measure("one *x*");
    renders.measure("two *y*");
    expect(renders.size).toBe(2);
    renders.take("one *x*");
    expect(renders.size).toBe(1);
    // A retried send of the same text renders it again.
    expect(renders.take("one *x*")).toBe(renderTelegramHtml("one *x*"));
    expect(renders.size).toBe(1);
  });

  it("drops the oldest renders beyond its budget and keeps none larger than it", () => {
    const renders = new MeasuredRenders(40);
    renders.measure("first text");
    renders.measure("second text");
    expect(renders.size).toBe(1);
    renders.measure("x".repeat(50));
    expect(renders.size).toBe(1);
    expect(renders.take("second text")).toBe("second text");
    expect(renders.size).toBe(0);
  });
});
