import { describe, expect, it } from "vitest";
import { TelegramConfigSchema } from "../src/config.js";

const issuesOf = (input: Record<string, unknown>) =>
  (TelegramConfigSchema.safeParse(input).error?.issues ?? []).map((i) => `${i.path.join(".")}: ${i.message}`);

describe("channels.telegram webhook settings, checked as Telegram's setWebhook checks them", () => {
  it("a secret with characters Telegram refuses, or over 256 of them, is a config error naming the key", () => {
    expect(issuesOf({ webhookSecret: "my webhook secret!!" })).toEqual([
      expect.stringMatching(/^webhookSecret: may hold only letters A-Z and a-z, digits, _ and -/),
    ]);
    expect(issuesOf({ webhookSecret: "a".repeat(257) })).toEqual([
      expect.stringMatching(/^webhookSecret: must be at most 256 characters/),
    ]);
    expect(issuesOf({ webhookSecret: "Good_secret-0123456789" })).toEqual([]);
  });

  it("Telegram's own Bot API needs an https webhook URL; a self-hosted one (--local) takes http", () => {
    expect(issuesOf({ mode: "webhook", webhookUrl: "http://bot.example.com/telegram/webhook" })).toEqual([
      expect.stringMatching(/^webhookUrl: must be an https:\/\/ URL/),
    ]);
    expect(issuesOf({ webhookUrl: "https://bot.example.com/telegram/webhook" })).toEqual([]);
    expect(
      issuesOf({ apiRoot: "http://127.0.0.1:8081", webhookUrl: "http://127.0.0.1:18789/telegram/webhook" }),
    ).toEqual([]);
  });
});
