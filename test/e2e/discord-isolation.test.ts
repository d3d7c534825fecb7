import { createLogger } from "@hub/core";
import { DiscordAdapter } from "@hub/discord";
import { TelegramAdapter } from "@hub/telegram";
import { afterEach, describe, expect, it } from "vitest";
import {
  memoryStateStore,
  privateText,
  startFakeDiscord,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { startTestHub } from "../support/hub.js";
import { freePort } from "../support/hub-process.js";
import { waitFor } from "../support/redis.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("a Discord fault is contained", () => {
  it("Discord unreachable at start: the hub starts, Telegram answers, Discord reports why it is reconnecting", async () => {
    const logger = createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });
    const telegram = await startFakeTelegram();
    const model = await startFakeOpenAI();
    const discord = new DiscordAdapter({
      token: "some-token",
      restApi: `http://127.0.0.1:${await freePort()}/api`, // nothing listens here
      state: memoryStateStore(),
      logger,
    });
    const hub = await startTestHub(
      {
        agent: { model: "fake/m" },
        models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
        channels: {
          telegram: { dmPolicy: "allowlist", allowFrom: ["4242"] },
          discord: { dmPolicy: "allowlist", allowFrom: ["1"] },
        },
      },
      "discord-down",
      [
        discord,
        new TelegramAdapter({
          botToken: telegram.token,
          apiRoot: telegram.apiRoot,
          state: memoryStateStore(),
          logger,
          pollTimeoutSeconds: 1,
        }),
      ],
    );
    cleanups.push(async () => {
      await hub.dispose();
      await telegram.close();
      await model.close();
    });
    const discordReport = () => hub.channels().find((c) => c.channel === "discord")?.status;
    await waitFor(() => discordReport()?.state === "reconnecting", "discord reported reconnecting");
    expect(discordReport()).toMatchObject({
      reason: expect.stringContaining("could not connect to Discord"),
      nextRetryAt: expect.any(Number),
    });
    model.script({ text: "Telegram still works." });
    telegram.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "anyone there?" }));
    await waitFor(() => telegram.sent("4242").length === 1, "the Telegram answer");
    expect(telegram.sent("4242")[0]?.text).toBe("Telegram still works.");
  });

  it("Discord failing its first start: the hub's supervisor tries again and the channel connects", async () => {
    const logger = createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });
    const fake = await startFakeDiscord();
    const model = await startFakeOpenAI();
    // The first login fails (the REST API answers 500); the supervisor's next try succeeds.
    fake.failNext("GET /gateway/bot", { status: 500 });
    const adapter = new DiscordAdapter({
      token: fake.token,
      restApi: fake.restApi,
      state: memoryStateStore(),
      logger,
    });
    const hub = await startTestHub(
      {
        agent: { model: "fake/m" },
        models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
        channels: { discord: { dmPolicy: "allowlist", allowFrom: [fake.user.id] } },
      },
      "discord-later",
      [adapter],
    );
    cleanups.push(async () => {
      await hub.dispose();
      await fake.close();
      await model.close();
    });
    const report = () => hub.channels().find((c) => c.channel === "discord")?.status;
    await waitFor(() => report()?.state === "connected", "connected on the supervisor's retry", 15_000);
    expect(fake.api.callsOf("GET /gateway/bot").length).toBe(2);
    model.script({ text: "Connected late." });
    fake.userMessage({ channelId: fake.dmChannelId, content: "hello" });
    await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the answer");
  }, 30_000);
});
