import { describe, expect, it } from "vitest";
import { decodeCharacterReferences, isSafeLinkTarget } from "../src/markdown-text.js";

describe("decodeCharacterReferences", () => {
  it("decodes numeric and common named references and leaves invalid ones as written", () => {
    expect(decodeCharacterReferences("&amp; &lt;&gt; &#65;&#x42; &copy; &nope; &#0; &#xD800;")).toBe(
      "& <> AB © &nope; &#0; &#xD800;",
    );
  });
});

describe("isSafeLinkTarget", () => {
  it("accepts only the given schemes, without whitespace or control characters", () => {
    const schemes = ["https?://", "mailto:"];
    expect(isSafeLinkTarget(" https://e.com/a ", schemes)).toBe(true);
    expect(isSafeLinkTarget("mailto:a@b.c", schemes)).toBe(true);
    for (const bad of [
      "javascript:alert(1)",
      "data:text/html,x",
      "https://e.com/a b",
      "https://e.com/\u0007",
      "tg:x",
    ]) {
      expect(isSafeLinkTarget(bad, schemes)).toBe(false);
    }
  });
});
