import { startFakeSlack } from "@hub/fakes";
import { describe, expect, it } from "vitest";
import { fetchSlackFile } from "../src/files.js";

async function text(body: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

describe("Slack private files", () => {
  it("downloads url_private_download with the bot token; a wrong token gets the sign-in page, an error", async () => {
    const fake = await startFakeSlack();
    try {
      const file = fake.uploadFile({ name: "notes.txt", mime: "text/plain", bytes: "release on friday" });
      const media = { kind: "document" as const, mime: "text/plain", ref: String(file.url_private_download) };
      const ok = await fetchSlackFile(media, {
        maxBytes: 1000,
        botToken: fake.botToken,
        apiUrl: fake.apiUrl,
      });
      expect(await text(ok.body)).toBe("release on friday");
      await expect(
        fetchSlackFile(media, { maxBytes: 1000, botToken: "xoxb-wrong", apiUrl: fake.apiUrl }),
      ).rejects.toThrow(/answered with text\/html/);
    } finally {
      await fake.close();
    }
  });

  it("never sends the bot token to a host that is not Slack's", async () => {
    const media = { kind: "image" as const, mime: "image/png", ref: "https://attacker.example/steal.png" };
    await expect(
      fetchSlackFile(media, { maxBytes: 1000, botToken: "xoxb-secret", apiUrl: "https://slack.com/api/" }),
    ).rejects.toThrow(/refusing to send the bot token to attacker.example/);
  });
});
