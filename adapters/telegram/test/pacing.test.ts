import { createLogger } from "@hub/core";
import { describe, expect, it } from "vitest";
import { telegramPlugin } from "../src/plugin.js";

const make = (raw: Record<string, unknown>) =>
  telegramPlugin.create(telegramPlugin.configSchema.parse({ botToken: "1:T", ...raw }), {
    accountId: "default",
    logger: createLogger({ level: "silent" }),
    state: { get: async () => undefined, set: async () => {} },
    stateDir: "/tmp",
  });
const direct = { channel: "telegram", accountId: "default", chatId: "42" };
const group = { ...direct, chatId: "-10042" };

describe("channels.telegram.pacing", () => {
  it("keeps Telegram's limits by default", async () => {
    const adapter = await make({});
    expect(adapter.sendIntervalMs?.(direct)).toBe(1000);
    expect(adapter.sendIntervalMs?.(group)).toBe(3000);
    expect(adapter.capabilities.maxSendsPerSecond).toBe(30);
  });

  it("overrides them key by key; 0 turns a limit off", async () => {
    const adapter = await make({ pacing: { chatIntervalMs: 0, maxSendsPerSecond: 0 } });
    expect(adapter.sendIntervalMs?.(direct)).toBe(0);
    expect(adapter.sendIntervalMs?.(group)).toBe(3000);
    expect(adapter.capabilities.maxSendsPerSecond).toBe(0);
    expect(adapter.capabilities.minSendIntervalMs).toBe(0);
  });

  it("rejects unknown pacing keys", () => {
    expect(() => telegramPlugin.configSchema.parse({ pacing: { perChat: 5 } })).toThrow();
  });
});
