import { createLogger } from "@hub/core";
import { memoryStateStore, startFakeTelegram } from "@hub/fakes";
import { TelegramAdapter } from "@hub/telegram";
import { describe, expect, it } from "vitest";
import { ChannelSupervisor } from "../src/supervisor.js";

const logger = createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("ChannelSupervisor.pauseIntake (the hub drains)", () => {
  it("a channel still connecting when the drain starts hands its intake over once it has started", async () => {
    const fake = await startFakeTelegram();
    let answer: () => void = () => {};
    const slowGetMe = new Promise<void>((resolve) => (answer = resolve));
    // Telegram answers getMe only after the drain has begun.
    fake.stub("getMe", async () => {
      await slowGetMe;
      return { id: fake.botId, is_bot: true, first_name: "Hub Test Bot", username: fake.botUsername };
    });
    const adapter = new TelegramAdapter({
      botToken: fake.token,
      apiRoot: fake.apiRoot,
      state: memoryStateStore(),
      logger,
      pollTimeoutSeconds: 1,
    });
    const supervisor = new ChannelSupervisor([adapter], async () => ({ kind: "accepted" }), logger);
    try {
      supervisor.start();
      await wait(200);
      await supervisor.pauseIntake();
      answer();
      await supervisor.firstAttempts();
      // Started during the drain: it polls no more (a standby process would poll now).
      await wait(300);
      const polls = fake.callsOf("getUpdates").length;
      await wait(1500);
      expect(fake.callsOf("getUpdates")).toHaveLength(polls);
    } finally {
      await supervisor.stop();
      await fake.close();
    }
  });
});
