import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { createLogger, fetchMediaUrl, type Media, type MsgContext } from "@hub/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FakeFileHost,
  type FakeHttpServer,
  type FakeOpenAI,
  startFakeAnthropic,
  startFakeOpenAI,
  startHttpServer,
} from "../../../test/fakes/src/index.js";
import { FailoverProvider } from "../src/failover.js";
import { formatBytes, mediaNote, mediaUse, sniffImageType } from "../src/media/kinds.js";
import { MediaPreparer, type MediaPreparerOptions } from "../src/media/prepare.js";
import { MediaStore } from "../src/media/store.js";
import { openAITranscriber } from "../src/media/transcribe.js";
import type { ModelEvent, ModelRequest } from "../src/model.js";
import { AnthropicProvider } from "../src/providers/anthropic.js";
import { OpenAIProvider } from "../src/providers/openai.js";

const log = createLogger({ level: "silent" });
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
let dir: string;
let host: FakeFileHost;
let server: FakeHttpServer;
let openai: FakeOpenAI;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "hub-media-"));
  host = new FakeFileHost();
  server = await startHttpServer(async (req, res) =>
    host.serve(res, new URL(req.url ?? "/", "http://x").pathname),
  );
  openai = await startFakeOpenAI();
});
afterAll(async () => {
  await server.close();
  await openai.close();
  await rm(dir, { recursive: true, force: true });
});

async function drain(events: AsyncIterable<ModelEvent | Uint8Array>): Promise<void> {
  for await (const _ of events);
}

function ctxWith(media: Media[], body = ""): MsgContext {
  return { channel: "test", accountId: "default", body, media } as unknown as MsgContext;
}

/** A preparer whose adapter fetches from the local file host, like the adapters do. */
function preparer(o: Partial<MediaPreparerOptions> = {}): MediaPreparer {
  return new MediaPreparer({
    store: new MediaStore(join(dir, `store-${Math.random()}`), { maxAgeMs: 60_000, maxTotalBytes: 1e9 }),
    fetcher: () => (media, options) =>
      fetchMediaUrl(`${server.url}/${media.ref}`, { ...options, platform: "Test", declaredSize: media.size }),
    maxAttachmentBytes: 1024 * 1024,
    maxDocumentChars: 1000,
    documentBudgetChars: 1500,
    inputs: { images: { maxBytes: 1024 } },
    ...o,
  });
}

describe("fetchMediaUrl (the adapters' capped download)", () => {
  it("refuses by Content-Length before reading, and by counted bytes when no length is sent", async () => {
    host.add("/big", { name: "big", mime: "application/pdf", bytes: Buffer.alloc(5000) });
    host.add("/big-chunked", {
      name: "big",
      mime: "application/pdf",
      bytes: Buffer.alloc(200_000),
      chunked: true,
    });
    await expect(fetchMediaUrl(`${server.url}/big`, { maxBytes: 4000, platform: "Test" })).rejects.toThrow(
      /larger than 4000 bytes/,
    );
    const streamed = await fetchMediaUrl(`${server.url}/big-chunked`, {
      maxBytes: 100_000,
      platform: "Test",
    });
    expect(streamed.size).toBeUndefined();
    await expect(drain(streamed.body)).rejects.toThrow(/larger than 100000 bytes/);
    await expect(fetchMediaUrl(`${server.url}/missing`, { maxBytes: 10, platform: "Test" })).rejects.toThrow(
      /Test file download failed with HTTP 404/,
    );
  });
});

describe("MediaPreparer", () => {
  it("gives an image to a model that takes images, typed by its bytes, and notes it for one that does not", async () => {
    host.add("/pixel", { name: "pixel", mime: "image/png", bytes: PNG });
    const photo: Media = { kind: "image", mime: "image/jpeg", ref: "pixel", size: PNG.length };
    const seen = await preparer().prepare([ctxWith([photo], "look")], AbortSignal.timeout(5000), log);
    expect(seen.images).toEqual([{ mime: "image/png", data: PNG.toString("base64"), name: "photo.jpg" }]);
    expect(seen.texts).toEqual([`[image: photo.jpg, ${PNG.length} B: attached]`]);
    const downloads = host.downloads.length;
    const blind = await preparer({ inputs: {} }).prepare([ctxWith([photo])], AbortSignal.timeout(5000), log);
    expect(blind).toMatchObject({ images: [], notices: [], texts: [`[image: photo.jpg, ${PNG.length} B]`] });
    expect(host.downloads.length).toBe(downloads);
  });

  it("refuses an image over the provider's limit with a notice, and any file over the hub's limit", async () => {
    host.add("/large.png", {
      name: "large.png",
      mime: "image/png",
      bytes: Buffer.concat([PNG, Buffer.alloc(4000)]),
    });
    const large: Media = { kind: "image", mime: "image/png", ref: "large.png", name: "large.png" };
    const out = await preparer().prepare([ctxWith([large])], AbortSignal.timeout(5000), log);
    expect(out.images).toEqual([]);
    expect(out.notices).toEqual(["large.png is 4 KB, too large for the model to look at (at most 1 KB)."]);
    const huge: Media = {
      kind: "video",
      mime: "video/mp4",
      ref: "nothing",
      size: 3 * 1024 * 1024,
      name: "clip.mp4",
    };
    const refused = await preparer().prepare([ctxWith([huge])], AbortSignal.timeout(5000), log);
    expect(refused).toMatchObject({ count: 1, refused: 1 });
    expect(refused.notices[0]).toBe(
      "I can't take clip.mp4: attachments can be at most 1 MB, and it is 3 MB. Please send a smaller file.",
    );
  });

  it("gives text documents as text within the budget, cut with a visible marker; binary ones as a note", async () => {
    host.add("/a.md", { name: "a.md", mime: "text/markdown", bytes: "A".repeat(1200) });
    host.add("/b.csv", { name: "b.csv", mime: "application/octet-stream", bytes: "x,y\n".repeat(300) });
    host.add("/c.txt", { name: "c.txt", mime: "text/plain", bytes: Buffer.from([1, 0, 2]) });
    const docs: Media[] = [
      { kind: "document", mime: "text/markdown", ref: "a.md", name: "a.md" },
      { kind: "document", mime: "application/octet-stream", ref: "b.csv", name: "b.csv" },
      { kind: "document", mime: "text/plain", ref: "c.txt", name: "c.txt" },
    ];
    const out = await preparer().prepare([ctxWith(docs)], AbortSignal.timeout(5000), log);
    const text = out.texts[0] ?? "";
    // 1000 of a.md (its own cap), then the 500 left of the turn's 1500 for b.csv.
    expect(text).toContain(
      `[document: a.md, 1 KB: its text follows]\n${"A".repeat(1000)}\n[a.md is cut here: 200 more characters not shown]\n[end of a.md]`,
    );
    expect(text).toContain("[b.csv is cut here: 700 more characters not shown]");
    expect(text).toContain("[document: c.txt, 3 B: not a text file, its content is not shown]");
  });

  it("normalizes only the part of a large document it shows: 8 MB in one line is cut at once", async () => {
    // Normalizing the whole file (line by line, character by character) held the event loop for seconds.
    const bytes = Buffer.from("\uFDFA".repeat((8 * 1024 * 1024) / 3));
    host.add("/big.txt", { name: "big.txt", mime: "text/plain", bytes });
    const big: Media = { kind: "document", mime: "text/plain", ref: "big.txt", name: "big.txt" };
    const roomy = preparer({ maxAttachmentBytes: 16 * 1024 * 1024 });
    const out = await roomy.prepare([ctxWith([big])], AbortSignal.timeout(20_000), log);
    const text = out.texts[0] ?? "";
    const shown = text.split("\n")[1] ?? "";
    expect(shown).toHaveLength(1000);
    expect(shown).toBe("\uFDFA".repeat(1000));
    expect(text).toMatch(/\[big\.txt is cut here: [\d,]+ more characters not shown\]/);
  }, 4000);

  it("transcribes voice through an OpenAI-compatible /audio/transcriptions, or notes it without a model", async () => {
    host.add("/voice", { name: "voice", mime: "audio/ogg", bytes: Buffer.from("OggS-voice") });
    const voice: Media = { kind: "voice", mime: "audio/ogg", ref: "voice" };
    openai.scriptTranscript("see you at nine");
    const transcribe = openAITranscriber({ baseUrl: openai.url, apiKey: "k", model: "whisper-1" });
    const heard = await preparer({ transcribe }).prepare([ctxWith([voice])], AbortSignal.timeout(5000), log);
    expect(heard.texts).toEqual(["[voice: voice.ogg, 10 B: transcribed]\nsee you at nine"]);
    expect(openai.transcriptions.at(-1)).toMatchObject({
      model: "whisper-1",
      fileName: "voice.ogg",
      mime: "audio/ogg",
    });
    const deaf = await preparer().prepare([ctxWith([voice])], AbortSignal.timeout(5000), log);
    expect(deaf.texts).toEqual([
      "[voice: voice.ogg: not transcribed (no transcription model is configured)]",
    ]);
  });

  it("reuses what an earlier attempt downloaded (a resumed run)", async () => {
    host.add("/once.txt", { name: "once.txt", mime: "text/plain", bytes: "hello" });
    const doc: Media = { kind: "document", mime: "text/plain", ref: "once.txt", name: "once.txt" };
    const p = preparer();
    const before = host.downloads.filter((d) => d === "/once.txt").length;
    await p.prepare([ctxWith([doc])], AbortSignal.timeout(5000), log);
    await p.prepare([ctxWith([doc])], AbortSignal.timeout(5000), log);
    expect(host.downloads.filter((d) => d === "/once.txt").length - before).toBe(1);
  });
});

describe("MediaStore retention", () => {
  it("removes files past the age limit, then the oldest until the total fits", async () => {
    const at = join(dir, "retention");
    const store = new MediaStore(at, { maxAgeMs: 3_600_000, maxTotalBytes: 2500 });
    const now = Date.now();
    for (const [name, ageMin] of [
      ["old", 120],
      ["a", 30],
      ["b", 20],
      ["c", 10],
    ] as const) {
      await store.save(name, Readable.from([Buffer.alloc(1000)]), 10_000);
      await utimes(join(at, name), new Date(now - ageMin * 60_000), new Date(now - ageMin * 60_000));
    }
    await writeFile(join(at, "stale.part"), "x");
    await utimes(join(at, "stale.part"), new Date(now - 7_200_000), new Date(now - 7_200_000));
    await store.prune(now);
    expect((await readdir(at)).sort()).toEqual(["b", "c"]);
  });

  it("never removes a file in use to fit the cap: one larger than the whole cap stays for its run", async () => {
    const at = join(dir, "in-use");
    const store = new MediaStore(at, { maxAgeMs: 3_600_000, maxTotalBytes: 500 });
    const saved = await store.save("big", Readable.from([Buffer.alloc(600)]), 10_000);
    expect((await readFile(saved.path)).length).toBe(600);
    // A minute on, no run reads it any more: the cap applies.
    await store.prune(Date.now() + 61_000);
    expect(await readdir(at)).toEqual([]);
  });
});

describe("images on the wire", () => {
  const image = { mime: "image/png", data: PNG.toString("base64"), name: "pixel.png" };
  const req = (model: string): ModelRequest => ({
    model,
    messages: [{ role: "user", content: "what is this?", images: [image] }],
  });

  it("OpenAI-compatible: image_url content parts with a data URL", async () => {
    const provider = new OpenAIProvider({ id: "fake", baseUrl: openai.url, apiKey: "k" });
    await drain(provider.stream(req("gpt-test")));
    expect(openai.requests.at(-1)?.messages.at(-1)?.content).toEqual([
      { type: "text", text: "what is this?" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${image.data}` } },
    ]);
  });

  it("Anthropic: a base64 image block before the text", async () => {
    const fake = await startFakeAnthropic();
    try {
      await drain(
        new AnthropicProvider({ id: "c", baseUrl: fake.url, apiKey: "k" }).stream(req("claude-test")),
      );
      expect(fake.requests.at(-1)?.messages.at(-1)?.content).toEqual([
        { type: "image", source: { type: "base64", media_type: "image/png", data: image.data } },
        { type: "text", text: "what is this?" },
      ]);
    } finally {
      await fake.close();
    }
  });

  it("failover gives a model without image input a note instead of the image", async () => {
    const provider = new OpenAIProvider({ id: "fake", baseUrl: openai.url, apiKey: "k" });
    const chain = new FailoverProvider(
      [{ ref: "fake/text", model: "text", profiles: [{ id: "p", provider }], images: false }],
      log,
    );
    await drain(chain.stream(req("text")));
    expect(openai.requests.at(-1)?.messages.at(-1)?.content).toBe(
      "what is this?\n[image: pixel.png: this model does not take images]",
    );
  });
});

describe("kinds", () => {
  it("decides what an attachment is for and names it", () => {
    expect(mediaUse({ kind: "document", mime: "application/json", ref: "r" })).toBe("text");
    expect(mediaUse({ kind: "document", mime: "application/octet-stream", ref: "r", name: "main.rs" })).toBe(
      "text",
    );
    expect(mediaUse({ kind: "document", mime: "application/pdf", ref: "r", name: "a.pdf" })).toBe("note");
    expect(mediaUse({ kind: "sticker", mime: "image/webp", ref: "r" })).toBe("image");
    expect(mediaNote({ kind: "image", mime: "image/jpeg", ref: "r" }, 122_880)).toBe(
      "[image: photo.jpg, 120 KB]",
    );
    expect(formatBytes(52 * 1024 * 1024)).toBe("52 MB");
    expect(sniffImageType(PNG)).toBe("image/png");
    expect(sniffImageType(Buffer.from("GIF89a"))).toBe("image/gif");
    expect(sniffImageType(Buffer.from("not an image"))).toBeUndefined();
  });
});
