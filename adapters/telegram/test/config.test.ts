import { describe, expect, it } from "vitest";
import { TelegramConfigSchema } from "../src/config.js";
import { telegramPlugin } from "../src/plugin.js";

// What `hub config validate` says of an account (the plugin's configProblems over the parsed config).
const problemsOf = (input: Record<string, unknown>) =>
  (
    telegramPlugin.configProblems?.(TelegramConfigSchema.parse({ botToken: "1:x", ...input }), "default") ??
    []
  ).map((p) => p.message);

describe("channels.telegram webhook settings, checked as Telegram's setWebhook checks them", () => {
  it("in webhook mode, a secret with characters Telegram refuses, or over 256 of them, names the key", () => {
    const webhook = { mode: "webhook", webhookUrl: "https://bot.example.com/telegram/webhook" };
    expect(problemsOf({ ...webhook, webhookSecret: "my webhook secret!!" })).toEqual([
      expect.stringMatching(
        /^channels\.telegram\.webhookSecret may hold only letters A-Z and a-z, digits, _ and -/,
      ),
    ]);
    expect(problemsOf({ ...webhook, webhookSecret: "a".repeat(257) })).toHaveLength(1);
    expect(problemsOf({ ...webhook, webhookSecret: "Good_secret-0123456789" })).toEqual([]);
  });

  it("Telegram's own Bot API needs an https webhook URL; a self-hosted one (--local) takes http", () => {
    const webhook = { mode: "webhook", webhookSecret: "Good_secret-0123456789" };
    expect(problemsOf({ ...webhook, webhookUrl: "http://bot.example.com/telegram/webhook" })).toEqual([
      expect.stringMatching(/^channels\.telegram\.webhookUrl must be an https:\/\/ URL/),
    ]);
    expect(
      problemsOf({ ...webhook, apiRoot: "http://127.0.0.1:8081", webhookUrl: "http://127.0.0.1:18789/tg" }),
    ).toEqual([]);
  });

  it("polling mode does not check webhook settings it never sends", () => {
    expect(
      problemsOf({ webhookSecret: "left.over.from.before!", webhookUrl: "http://old.example.com/x" }),
    ).toEqual([]);
  });

  it("a malformed URL is the schema's sentence, not a crash", () => {
    const parsed = TelegramConfigSchema.safeParse({ mode: "webhook", webhookUrl: "bot.example.com/hook" });
    expect(parsed.error?.issues.map((i) => i.path.join("."))).toEqual(["webhookUrl"]);
  });

  it("the schema stays a plain object (hub config schema makes its keys optional)", () => {
    expect(() => TelegramConfigSchema.partial()).not.toThrow();
  });
});
