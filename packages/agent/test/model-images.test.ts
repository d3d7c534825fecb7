import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, Outbox, type OutboxFile } from "@hub/core";
import { afterAll, describe, expect, it } from "vitest";
import { modelImageSender } from "../src/model-images.js";

const dir = mkdtempSync(join(tmpdir(), "hub-model-images-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("images a model puts in its answer", () => {
  it("are files named for their type: a PNG is an image, an SVG a document, an unknown type never a .png", async () => {
    const sent: OutboxFile[] = [];
    const send = modelImageSender(
      { outbox: new Outbox(dir), maxBytes: 1024, log: createLogger({ level: "silent" }) },
      async (file) => void sent.push(file),
      async () => {},
    );
    await send({ mime: "image/png", data: Buffer.from("png bytes") });
    await send({ mime: "image/svg+xml", data: Buffer.from("<svg><script>alert(1)</script></svg>") });
    await send({ mime: "image/x-unknown", data: Buffer.from("?") });
    expect(sent.map((f) => [f.filename, f.kind])).toEqual([
      ["image-1.png", "image"],
      ["image-2.svg", "file"],
      ["image-3.bin", "file"],
    ]);
  });
});
