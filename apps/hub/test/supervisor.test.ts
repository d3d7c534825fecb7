import { createLogger } from "@hub/core";
import { memoryStateStore, startFakeSlack, startFakeTelegram } from "@hub/fakes";
import { SlackAdapter } from "@hub/slack";
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

describe("ChannelSupervisor retries", () => {
  it("a start the platform rate-limits is tried again no sooner than it said (Slack's Retry-After), not on the 1 s backoff", async () => {
    const fake = await startFakeSlack();
    const adapter = new SlackAdapter({
      botToken: fake.botToken,
      signingSecret: "s",
      apiUrl: fake.apiUrl,
      state: memoryStateStore(),
      logger,
    });
    fake.failNext("auth.test", { status: 429, retryAfter: 3 });
    const supervisor = new ChannelSupervisor([adapter], async () => ({ kind: "accepted" }), logger);
    try {
      supervisor.start();
      await fake.waitForCall("auth.test", undefined, 5_000);
      const first = Date.now();
      await wait(2_000);
      expect(fake.callsOf("auth.test")).toHaveLength(1);
      await expect.poll(() => fake.callsOf("auth.test").length, { timeout: 5_000 }).toBeGreaterThan(1);
      expect(Date.now() - first).toBeGreaterThanOrEqual(2_900);
    } finally {
      await supervisor.stop();
      await fake.close();
    }
  }, 15_000);
});
