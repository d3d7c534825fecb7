import { ChannelRefusedError, configJsonSchema, createLogger, parseConfig } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { AdapterRegistry } from "../src/adapter-registry.js";
import { buildChannelAdapters } from "../src/adapters.js";
import { channelPlugins } from "../src/plugins.js";

const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { lazyConnect: true });
afterAll(() => redis.disconnect());
const deps = { redis, prefix: "plugins-test", logger: createLogger({ level: "silent" }), stateDir: "/tmp" };
const noState = { get: async () => undefined, set: async () => undefined };
const parse = (raw: unknown, env: NodeJS.ProcessEnv = {}) =>
  parseConfig(raw, "hub.json5", env, channelPlugins);

describe("the hub's channel plugins", () => {
  it("builds one Telegram adapter per enabled account, each with its accountId", async () => {
    const config = parse({
      channels: {
        telegram: {
          allowFrom: ["1"],
          accounts: { work: { botToken: "1:A" }, home: { botToken: "2:B" }, off: { enabled: false } },
        },
      },
    });
    const adapters = await buildChannelAdapters(config, channelPlugins, deps);
    expect(adapters.map((a) => [a.channel, a.accountId])).toEqual([
      ["telegram", "work"],
      ["telegram", "home"],
    ]);
  });

  it("takes TELEGRAM_BOT_TOKEN from the environment, and names the missing token's key otherwise", async () => {
    const fromEnv = parse({}, { TELEGRAM_BOT_TOKEN: "9:ENV" });
    expect(fromEnv.channels.telegram?.accounts.default?.botToken).toBe("9:ENV");
    expect((await buildChannelAdapters(fromEnv, channelPlugins, deps)).map((a) => a.accountId)).toEqual([
      "default",
    ]);
    // The account without a token fails alone, with the sentence naming its key; the other one is built.
    const missing = parse({ channels: { telegram: { accounts: { work: {}, home: { botToken: "2:B" } } } } });
    const [work, home] = await buildChannelAdapters(missing, channelPlugins, deps);
    expect([work?.accountId, home?.accountId]).toEqual(["work", "home"]);
    const refused = work?.start(async () => ({ kind: "accepted" }));
    await expect(refused).rejects.toBeInstanceOf(ChannelRefusedError);
    await expect(refused).rejects.toThrow(
      "channels.telegram.accounts.work is configured without a bot token; set channels.telegram.accounts.work.botToken (from @BotFather).",
    );
    expect(home?.constructor.name).toBe("TelegramAdapter");
    // The channel's capabilities are the built account's, whichever comes first.
    const registry = new AdapterRegistry([work, home].filter((a) => a !== undefined));
    expect(registry.forChannel("telegram")).toBe(home);
  });

  it("every plugin refuses to build an account with the first problem its configProblems lists", async () => {
    const checked = channelPlugins.filter((p) => p.configProblems);
    expect(checked.map((p) => p.name)).toEqual(expect.arrayContaining(["telegram", "discord", "slack"]));
    for (const plugin of checked) {
      // An account with nothing set: no token, so each of these has at least one problem.
      const account = plugin.configSchema.parse({});
      const problems = plugin.configProblems?.(account, "default") ?? [];
      expect(problems.length, plugin.name).toBeGreaterThan(0);
      await expect(
        plugin.create(account, {
          accountId: "default",
          logger: deps.logger,
          state: noState,
          stateDir: "/tmp",
        }),
        plugin.name,
      ).rejects.toThrow(problems[0]?.message ?? "");
    }
  });

  it("stops on a misspelt Telegram key or channel name with the path and the fix", () => {
    expect(() => parse({ channels: { telegram: { botTokn: "x" } } })).toThrow(
      /channels\.telegram \(unknown key "botTokn"\): .*did you mean `botToken`\? .*config schema/,
    );
    expect(() => parse({ channels: { telegram: { accounts: { a: { mode: "push" } } } } })).toThrow(
      /channels\.telegram\.accounts\.a\.mode: /,
    );
    expect(() => parse({ channels: { telgram: {} } })).toThrow(
      /unknown channel "telgram" \(installed channels: webchat, telegram\b.*\); did you mean `telegram`\?/,
    );
  });

  it("`hub config schema` includes the Telegram schema with its accounts form", () => {
    const schema = configJsonSchema(channelPlugins) as {
      properties: { channels: { properties: Record<string, { properties: Record<string, unknown> }> } };
    };
    expect(Object.keys(schema.properties.channels.properties.telegram?.properties ?? {})).toEqual(
      expect.arrayContaining(["botToken", "apiRoot", "mode", "webhookSecret", "accounts", "dmPolicy"]),
    );
  });
});
