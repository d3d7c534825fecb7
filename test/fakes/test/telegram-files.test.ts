import { Api, GrammyError, InputFile } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeTelegram, startFakeTelegram } from "../src/telegram/index.js";

// sendPhoto and sendDocument through grammY's real client: multipart with `attach://` parts.

let fake: FakeTelegram;
let api: Api;

beforeEach(async () => {
  fake = await startFakeTelegram();
  api = new Api(fake.token, { apiRoot: fake.apiRoot });
});

afterEach(async () => {
  await fake.close();
});

describe("fake Telegram: files", () => {
  it("takes a document upload with a caption and records the exact bytes", async () => {
    const bytes = Buffer.from("col\n1\n2\n");
    const msg = await api.sendDocument(42, new InputFile(bytes, "data.csv"), {
      caption: "<b>data</b>",
      parse_mode: "HTML",
    });
    expect(msg.document).toMatchObject({ file_name: "data.csv", file_size: bytes.length });
    expect(msg.caption).toBe("data");
    expect(msg.caption_entities).toEqual([{ type: "bold", offset: 0, length: 4 }]);
    const [sent] = fake.sent(42);
    const part = sent?.[String(sent.document).replace("attach://", "")] as { filename: string; data: Buffer };
    expect(part).toMatchObject({ filename: "data.csv", data: bytes });
  });

  it("takes a photo upload, answering with photo sizes; the file can be downloaded again", async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const msg = await api.sendPhoto(42, new InputFile(png, "chart.png"), { message_thread_id: 5 });
    expect(msg.photo?.[0]).toMatchObject({ file_size: png.length, width: 320, height: 240 });
    const file = await api.getFile(msg.photo?.[0]?.file_id ?? "");
    const res = await fetch(`${fake.apiRoot}/file/bot${fake.token}/${file.file_path}`);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(png);
  });

  it("refuses a missing file and a caption over 1024 characters, like Telegram", async () => {
    const noFile = await api.sendPhoto(42, "attach://nothing").catch((e: unknown) => e);
    expect(noFile).toBeInstanceOf(GrammyError);
    expect((noFile as GrammyError).error_code).toBe(400);
    const long = await api
      .sendDocument(42, new InputFile(Buffer.from("x"), "x.txt"), { caption: "c".repeat(1025) })
      .catch((e: unknown) => e);
    expect((long as GrammyError).description).toBe("Bad Request: message caption is too long");
    expect(fake.sent(42)).toEqual([]);
  });
});
