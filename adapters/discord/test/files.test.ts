import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, type OutboundAttachment } from "@hub/core";
import { startFakeDiscord } from "@hub/fakes";
import { afterAll, describe, expect, it } from "vitest";
import { DISCORD_MAX_UPLOAD_BYTES } from "../src/send-file.js";
import { adapterFor } from "./harness.js";

const dir = mkdtempSync(join(tmpdir(), "hub-discord-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function attachment(name: string, bytes: Buffer, mime: string): OutboundAttachment {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return {
    path,
    filename: name,
    mime,
    kind: mime.startsWith("image/") ? "image" : "file",
    size: bytes.length,
  };
}

describe("discord files", () => {
  it("a file segment is one message with files[0] and attachments; sent twice (one nonce) it is posted once", async () => {
    const fake = await startFakeDiscord();
    const adapter = adapterFor(fake, createLogger({ level: "silent" }));
    try {
      const target = { channel: "discord", accountId: "default", chatId: fake.channelId };
      const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
      const segment = {
        replyId: "run-f",
        index: 1,
        text: "the chart",
        attachment: attachment("chart.png", png, "image/png"),
      };
      const first = await adapter.send(segment, target);
      const second = await adapter.send(segment, target);
      expect(second.messageId).toBe(first.messageId);
      const sent = fake.sent(fake.channelId);
      expect(sent).toHaveLength(1);
      expect(sent[0]?.message.content).toBe("the chart");
      expect(sent[0]?.files).toEqual([{ filename: "chart.png", contentType: "image/png", data: png }]);
      expect(sent[0]?.message.attachments).toEqual([
        expect.objectContaining({ filename: "chart.png", size: 11 }),
      ]);
      expect(sent[0]?.body).toMatchObject({
        attachments: [{ id: 0, filename: "chart.png" }],
        enforce_nonce: true,
        nonce: expect.any(String),
      });
    } finally {
      await adapter.stop();
      await fake.close();
    }
  });

  it("a file over Discord's upload limit becomes a text note in its place", async () => {
    const fake = await startFakeDiscord();
    const adapter = adapterFor(fake, createLogger({ level: "silent" }));
    try {
      const target = { channel: "discord", accountId: "default", chatId: fake.channelId };
      const big = attachment(
        "huge.bin",
        Buffer.alloc(DISCORD_MAX_UPLOAD_BYTES + 1),
        "application/octet-stream",
      );
      await adapter.send({ replyId: "run-big", index: 0, text: "", attachment: big }, target);
      const [sent] = fake.sent(fake.channelId);
      expect(sent?.files).toBeUndefined();
      expect(sent?.message.content).toBe(
        "[file: huge.bin, 10.0 MB; not attached: it is larger than Discord's 10 MB upload limit]",
      );
    } finally {
      await adapter.stop();
      await fake.close();
    }
  });
});
