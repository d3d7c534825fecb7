import type { FakeOpenAI } from "@hub/fakes";
import { expect, it } from "vitest";
import { waitFor } from "../../support/redis.js";
import type { ConformanceHarness, InboundFile } from "./harness.js";

/** The attachment limit the suite's hub runs with (`limits.maxAttachmentBytes`), small so an oversized file is cheap. */
export const SUITE_MAX_ATTACHMENT_BYTES = 1024 * 1024;

/** A tiny valid PNG (1×1 pixel). */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

type UserContent = string | Array<{ type: string; text?: string; image_url?: { url: string } }>;

/**
 * The media cases of the conformance suite, for channels whose harness can
 * send a file: the attachment travels platform -> adapter -> Redis (as a
 * reference) -> the agent, which fetches it through the adapter's
 * `fetchMedia` from the fake platform and gives it to the (fake) model.
 */
export function mediaCases(h: ConformanceHarness, model: () => FakeOpenAI): void {
  const can = h.directWithFile ? it : it.skip;
  const send = (text: string, file: InboundFile) => h.directWithFile!(text, file);
  const lastUserContent = (): UserContent =>
    (model()
      .requests.at(-1)
      ?.messages.findLast((m) => m.role === "user")?.content ?? "") as UserContent;
  const answer = async (before: number, what: string) =>
    waitFor(() => h.outbound(h.ids.directChat).length > before, what, 20_000);

  can("an image reaches a model that takes images as an image input", async () => {
    model().script({ text: "A single pixel." });
    const before = h.outbound(h.ids.directChat).length;
    await send("what is in this picture?", {
      kind: "image",
      name: "pixel.png",
      mime: "image/png",
      bytes: PNG,
    });
    await answer(before, "an answer about the image");
    const content = lastUserContent();
    expect(Array.isArray(content)).toBe(true);
    const parts = content as Exclude<UserContent, string>;
    expect(parts.find((p) => p.type === "text")?.text).toContain("what is in this picture?");
    expect(parts.find((p) => p.type === "image_url")?.image_url?.url).toBe(
      `data:image/png;base64,${PNG.toString("base64")}`,
    );
    expect(h.outbound(h.ids.directChat).at(-1)?.text).toBe("A single pixel.");
  });

  can("a text document reaches the model as text", async () => {
    model().script({ text: "Ship on friday." });
    const before = h.outbound(h.ids.directChat).length;
    const notes = "# Release\n\n- freeze on thursday\n- ship on friday\n";
    await send("summarize this", {
      kind: "document",
      name: "notes.md",
      mime: "text/markdown",
      bytes: Buffer.from(notes),
    });
    await answer(before, "an answer about the document");
    const text = JSON.stringify(lastUserContent());
    expect(text).toContain("summarize this");
    expect(text).toContain("[document: notes.md");
    expect(text).toContain("- ship on friday");
  });

  can("a voice note is transcribed and the transcript reaches the model", async () => {
    model().scriptTranscript("please call me back tomorrow");
    model().script({ text: "I will." });
    const before = h.outbound(h.ids.directChat).length;
    const heard = model().transcriptions.length;
    const ogg = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(600, 7)]);
    await send("", { kind: "voice", name: "voice.ogg", mime: "audio/ogg", bytes: ogg });
    await answer(before, "an answer to the voice note");
    expect(
      model()
        .transcriptions.slice(heard)
        .map((t) => [t.model, t.bytes.equals(ogg)]),
    ).toEqual([["whisper-1", true]]);
    expect(JSON.stringify(lastUserContent())).toContain("please call me back tomorrow");
  });

  can(
    "an oversized attachment is refused with a clear message, without a download or a model call",
    async () => {
      const calls = model().requests.length;
      const downloads = h.downloads?.();
      const before = h.outbound(h.ids.directChat).length;
      const big = Buffer.alloc(SUITE_MAX_ATTACHMENT_BYTES + 512 * 1024, 1);
      await send("", { kind: "document", name: "big.pdf", mime: "application/pdf", bytes: big });
      await answer(before, "the refusal");
      expect(
        h
          .outbound(h.ids.directChat)
          .slice(before)
          .map((m) => m.text),
      ).toEqual([
        "I can't take big.pdf: attachments can be at most 1 MB, and it is 1.5 MB. Please send a smaller file.",
      ]);
      expect(model().requests.length).toBe(calls);
      if (downloads !== undefined) expect(h.downloads?.()).toBe(downloads);
    },
  );
}
