import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { redisStateStore } from "@hub/app";
import { createLogger } from "@hub/core";
import {
  privateText,
  startFakeDiscord,
  startFakeOpenAI,
  startFakeSlack,
  startFakeTelegram,
} from "@hub/fakes";
import { telegramPlugin } from "@hub/telegram";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub } from "../support/hub.js";
import { freePort, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../support/redis.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("supervised channel lifecycle", () => {
  it("runs the hub and healthy channels while one cannot connect; reports each; recovers when the platform is back", async () => {
    const { Redis } = await import("ioredis");
    const redis = new Redis(REDIS_URL);
    cleanups.push(() => redis.disconnect());
    const logger = createLogger({ level: "silent" });
    const model = await startFakeOpenAI();
    cleanups.push(() => model.close());
    const healthy = await startFakeTelegram({ token: "1:HEALTHY" });
    cleanups.push(() => healthy.close());
    const downPort = await freePort();
    // Polling offsets live under a prefix of this run's own: a previous run's offset must not skip this run's updates.
    const statePrefix = testPrefix("lifecycle-state");
    cleanups.push(() => dropPrefix(statePrefix));
    const make = (accountId: string, botToken: string, apiRoot: string) =>
      telegramPlugin.create(telegramPlugin.configSchema.parse({ botToken, apiRoot }), {
        accountId,
        logger,
        state: redisStateStore(redis, `${statePrefix}:${accountId}`),
        stateDir: "/tmp",
      });
    const adapters = await Promise.all([
      make("healthy", healthy.token, healthy.apiRoot),
      make("down", "2:DOWN", `http://127.0.0.1:${downPort}`),
      make("refused", "3:WRONG", healthy.apiRoot),
    ]);
    const started = Date.now();
    const hub = await startTestHub(
      {
        agent: { model: "fake/m" },
        models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
        channels: {
          telegram: { dmPolicy: "open", allowFrom: ["*"], accounts: { healthy: {}, down: {}, refused: {} } },
        },
      },
      "lifecycle",
      adapters,
      logger,
    );
    cleanups.push(() => hub.dispose());
    expect(Date.now() - started).toBeLessThan(10_000);
    const state = (id: string) =>
      hub.channels().find((c) => c.channel === "telegram" && c.accountId === id)?.status;
    expect(state("healthy")).toMatchObject({ state: "connected" });
    expect(state("down")).toMatchObject({
      state: "reconnecting",
      reason: expect.stringContaining("could not be reached"),
      nextRetryAt: expect.any(Number),
    });
    expect(state("refused")).toMatchObject({
      state: "failed",
      reason:
        "Telegram did not accept the bot token (401 Unauthorized); check channels.telegram.accounts.refused.botToken (from @BotFather).",
    });

    // The gateway tells an operator tool the same.
    const client = await GatewayClient.open(hub.port, hub.token);
    cleanups.push(() => client.close());
    const res = await client.request("channels.status");
    expect(res.ok).toBe(true);
    const reported = (
      res as {
        payload: { channels: Array<{ channel: string; accountId: string; status: { state: string } }> };
      }
    ).payload.channels;
    expect(reported.map((c) => [c.channel, c.accountId, c.status.state])).toEqual([
      ["telegram", "healthy", "connected"],
      ["telegram", "down", "reconnecting"],
      ["telegram", "refused", "failed"],
      ["webchat", "default", "connected"],
    ]);

    // The healthy bot answers meanwhile.
    model.script({ text: "Up." });
    healthy.pushUpdate(privateText({ chatId: 9, fromId: 9, text: "hello" }));
    await waitFor(() => healthy.sent("9").length === 1, "the healthy bot's answer");

    // The platform comes back where the adapter knows it: the channel connects and answers by itself.
    const back = await startFakeTelegram({ token: "2:DOWN", port: downPort });
    cleanups.push(() => back.close());
    await waitFor(() => state("down")?.state === "connected", "the channel reconnects", 20_000);
    // Connected again, it still shows the operator what went wrong, and when.
    expect(state("down")?.reason).toBeUndefined();
    expect(state("down")?.lastError).toEqual({ reason: expect.any(String), at: expect.any(Number) });
    expect(state("down")?.lastError?.reason).not.toBe("");
    model.script({ text: "Back." });
    back.pushUpdate(privateText({ chatId: 10, fromId: 10, text: "are you back?" }));
    await waitFor(() => back.sent("10").length === 1, "an answer once the platform is back", 15_000);
  }, 60_000);
});

describe("npm start with a channel that cannot connect", () => {
  it("prints the web chat link and the token at once, and says the channel is retrying", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "hub-lifecycle-"));
    const prefix = testPrefix("lifecycle-start");
    const config = join(stateDir, "hub.json5");
    writeFileSync(
      config,
      `{ channels: { telegram: { apiRoot: "http://127.0.0.1:${await freePort()}", allowFrom: ["1"] } } }`,
    );
    const port = await freePort();
    const hub = await startHubProcess(
      {
        HUB_STATE_DIR: stateDir,
        HUB_CONFIG: config,
        HUB_REDIS_PREFIX: prefix,
        TELEGRAM_BOT_TOKEN: "5:UNREACHABLE",
      },
      port,
    );
    cleanups.push(async () => {
      if (hub.child.exitCode === null) await hub.stop();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
    });
    const output = () => hub.output.join("");
    await waitFor(() => output().includes("Open the web chat:"), "the web chat link", 10_000);
    expect(output()).toContain("Gateway token (shown once");
    expect(output()).toContain('"msg":"hub started"');
    await waitFor(
      () =>
        /telegram channel could not connect \(Telegram could not be reached .*\); next try in \d+ s/.test(
          output(),
        ),
      "one line saying the channel retries",
      10_000,
    );
    expect(output()).not.toContain("5:UNREACHABLE");
  }, 30_000);

  it("a refused bot token is one clear line; the hub keeps running with the channel failed", async () => {
    const fake = await startFakeTelegram();
    const stateDir = mkdtempSync(join(tmpdir(), "hub-lifecycle-"));
    const prefix = testPrefix("lifecycle-refused");
    const config = join(stateDir, "hub.json5");
    writeFileSync(config, `{ channels: { telegram: { apiRoot: "${fake.apiRoot}", allowFrom: ["1"] } } }`);
    const port = await freePort();
    const hub = await startHubProcess(
      {
        HUB_STATE_DIR: stateDir,
        HUB_CONFIG: config,
        HUB_REDIS_PREFIX: prefix,
        TELEGRAM_BOT_TOKEN: "6:WRONG-TOKEN",
      },
      port,
    );
    cleanups.push(async () => {
      if (hub.child.exitCode === null) await hub.stop();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
      await fake.close();
    });
    const line =
      "telegram channel failed: Telegram did not accept the bot token (401 Unauthorized); check channels.telegram.botToken or TELEGRAM_BOT_TOKEN (from @BotFather).";
    await waitFor(() => hub.output.join("").includes(line), "the failed line", 10_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(hub.output.join("").split(line).length - 1).toBe(1);
    expect(hub.child.exitCode).toBeNull();
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).ok).toBe(true);
  }, 30_000);

  it("a token Discord or Slack refuses is one line each too, naming the key to fix", async () => {
    const discord = await startFakeDiscord();
    const slack = await startFakeSlack();
    const stateDir = mkdtempSync(join(tmpdir(), "hub-lifecycle-"));
    const prefix = testPrefix("lifecycle-refused-dc-slack");
    const config = join(stateDir, "hub.json5");
    writeFileSync(
      config,
      JSON.stringify({
        channels: {
          discord: { restApi: discord.restApi, allowFrom: ["1"] },
          slack: {
            apiUrl: slack.apiUrl,
            allowFrom: ["U1"],
            // `default` takes SLACK_BOT_TOKEN; `socket`'s bot token is right and its app-level token is not.
            accounts: {
              default: {},
              socket: { mode: "socket", botToken: slack.botToken, appToken: "xapp-1-wrong" },
            },
          },
        },
      }),
    );
    const port = await freePort();
    const hub = await startHubProcess(
      {
        HUB_STATE_DIR: stateDir,
        HUB_CONFIG: config,
        HUB_REDIS_PREFIX: prefix,
        DISCORD_BOT_TOKEN: "wrong.discord.token",
        SLACK_BOT_TOKEN: "xoxb-wrong",
        SLACK_SIGNING_SECRET: "a-signing-secret",
      },
      port,
    );
    cleanups.push(async () => {
      if (hub.child.exitCode === null) await hub.stop();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
      await discord.close();
      await slack.close();
    });
    const lines = () => hub.output.join("").split("\n");
    const naming = (key: string) => lines().filter((l) => l.includes(key));
    const discordLine =
      "discord channel failed: Discord refused the bot token; set a valid channels.discord.token or DISCORD_BOT_TOKEN (Developer Portal > Bot > Reset Token).";
    const slackLine =
      "slack channel failed: Slack refused the bot token; check channels.slack.botToken or SLACK_BOT_TOKEN, the xoxb- token (Slack answered invalid_auth).";
    await waitFor(() => hub.output.join("").includes(discordLine), "Discord's failed line", 10_000);
    const socketLine =
      "slack channel failed: Slack refused the app-level token; check channels.slack.accounts.socket.appToken, the xapp- token with connections:write (Slack answered invalid_auth).";
    await waitFor(() => hub.output.join("").includes(slackLine), "Slack's failed line", 10_000);
    await waitFor(() => hub.output.join("").includes(socketLine), "Slack's socket failed line", 10_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(naming("channels.discord.token")).toEqual([expect.stringContaining(discordLine)]);
    expect(naming("channels.slack.botToken")).toEqual([expect.stringContaining(slackLine)]);
    // Nor does the Socket Mode client's own error line repeat the refused app-level token.
    expect(lines().filter((l) => l.includes('"accountId":"socket"') && /"level":(40|50)/.test(l))).toEqual([
      expect.stringContaining(socketLine),
    ]);
    expect(hub.child.exitCode).toBeNull();
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).ok).toBe(true);
  }, 30_000);

  it("a channel without its bot token fails alone with the key to set; the web chat runs", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "hub-lifecycle-"));
    const prefix = testPrefix("lifecycle-no-token");
    const config = join(stateDir, "hub.json5");
    writeFileSync(config, `{ channels: { telegram: { allowFrom: ["1"] } } }`);
    const port = await freePort();
    const hub = await startHubProcess(
      { HUB_STATE_DIR: stateDir, HUB_CONFIG: config, HUB_REDIS_PREFIX: prefix, TELEGRAM_BOT_TOKEN: "" },
      port,
    );
    cleanups.push(async () => {
      if (hub.child.exitCode === null) await hub.stop();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
    });
    const line =
      "telegram channel failed: channels.telegram is configured without a bot token; set channels.telegram.botToken or TELEGRAM_BOT_TOKEN (from @BotFather).";
    await waitFor(() => hub.output.join("").includes(line), "the failed line", 10_000);
    expect(hub.output.join("")).toContain("Open the web chat:");
    expect(hub.child.exitCode).toBeNull();
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).ok).toBe(true);
  }, 30_000);
});
