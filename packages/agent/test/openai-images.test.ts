import { describe, expect, it } from "vitest";
import { imagesOf } from "../src/providers/openai-images.js";

describe("images in OpenAI-compatible answers", () => {
  it("decodes data: URL images of a delta or message, and ignores remote URLs and other shapes", () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
    const delta = {
      content: null,
      images: [
        { type: "image_url", image_url: { url: `data:image/PNG;base64,${png.toString("base64")}` } },
        { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
        { type: "image_url", image_url: { url: "data:text/html;base64,PGI+" } },
      ],
    };
    expect(imagesOf(delta)).toEqual([{ mime: "image/png", data: png }]);
    expect(imagesOf({ content: "text only" })).toEqual([]);
    expect(imagesOf({ images: "not a list" })).toEqual([]);
    expect(imagesOf(null)).toEqual([]);
  });
});
