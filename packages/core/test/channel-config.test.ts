import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  ChannelAccessSchema,
  type ChannelConfigSource,
  channelAccess,
  configJsonSchema,
  parseConfig,
} from "../src/index.js";

// A made-up channel: core knows no platform, so its tests bring their own plugin.
const example: ChannelConfigSource = {
  name: "examplechat",
  configSchema: ChannelAccessSchema.extend({
    apiKey: z.string().min(1).optional(),
    region: z.enum(["eu", "us"]).default("eu"),
  }).strict(),
  env: { EXAMPLECHAT_API_KEY: "apiKey" },
};

describe("channels config (plugins)", () => {
  it("validates the single-account shorthand with the plugin's schema, as account `default`", () => {
    const config = parseConfig({ channels: { examplechat: { apiKey: "k", allowFrom: ["1"] } } }, "c", {}, [
      example,
    ]);
    expect(config.channels.examplechat?.accounts).toEqual({
      default: expect.objectContaining({ apiKey: "k", region: "eu", allowFrom: ["1"], accountId: "default" }),
    });
    expect(channelAccess(config.channels, "examplechat", "default")?.allowFrom).toEqual(["1"]);
    expect(channelAccess(config.channels, "examplechat", "other")).toBeUndefined();
  });

  it("gives every channel the live keys: previews off and the reaction only in DMs by default", () => {
    const config = parseConfig(
      {
        channels: {
          examplechat: {
            accounts: {
              plain: {},
              live: { streaming: "preview", ackReaction: "👀", ackReactionScope: "all" },
            },
          },
        },
      },
      "c",
      {},
      [example],
    );
    expect(channelAccess(config.channels, "examplechat", "plain")).toMatchObject({
      streaming: "off",
      ackReactionScope: "direct",
    });
    expect(channelAccess(config.channels, "examplechat", "plain")?.ackReaction).toBeUndefined();
    expect(channelAccess(config.channels, "examplechat", "live")).toMatchObject({
      streaming: "preview",
      ackReaction: "👀",
      ackReactionScope: "all",
    });
    expect(() =>
      parseConfig({ channels: { examplechat: { streaming: "typewriter" } } }, "c", {}, [example]),
    ).toThrow(/channels\.examplechat\.streaming/);
  });

  it("builds one account per `accounts.<id>`, each inheriting the shared keys", () => {
    const config = parseConfig(
      {
        channels: {
          examplechat: {
            dmPolicy: "allowlist",
            allowFrom: ["7"],
            accounts: { work: { apiKey: "w", region: "us" }, home: { apiKey: "h", allowFrom: ["8"] } },
          },
        },
      },
      "c",
      {},
      [example],
    );
    const accounts = config.channels.examplechat?.accounts ?? {};
    expect(Object.keys(accounts).sort()).toEqual(["home", "work"]);
    expect(accounts.work).toMatchObject({ accountId: "work", apiKey: "w", region: "us", allowFrom: ["7"] });
    expect(accounts.home).toMatchObject({ accountId: "home", apiKey: "h", region: "eu", allowFrom: ["8"] });
    expect(accounts.home?.dmPolicy).toBe("allowlist");
  });

  it("refuses an unknown channel and unknown keys with the path the operator wrote and the fix", () => {
    expect(() => parseConfig({ channels: { signal: {} } }, "hub.json5", {}, [example])).toThrow(
      /channels\.signal: unknown channel "signal" \(installed channels: webchat, examplechat\); remove it, fix its spelling, or install its plugin\.$/m,
    );
    expect(() => parseConfig({ channels: { exmplechat: {} } }, "hub.json5", {}, [example])).toThrow(
      /channels\.exmplechat: unknown channel "exmplechat" \(installed channels: webchat, examplechat\); did you mean `examplechat`\? Fix its spelling, remove it, or install its plugin\.$/m,
    );
    expect(() =>
      parseConfig({ channels: { examplechat: { apiKy: "x" } } }, "hub.json5", {}, [example]),
    ).toThrow(/channels\.examplechat \(unknown key "apiKy"\): .*did you mean `apiKey`\?.*config schema/);
    // An account's keys are the plugin's keys too.
    expect(() =>
      parseConfig({ channels: { examplechat: { accounts: { a: { regoin: "eu" } } } } }, "hub.json5", {}, [
        example,
      ]),
    ).toThrow(/channels\.examplechat\.accounts\.a \(unknown key "regoin"\): .*did you mean `region`\?/);
    expect(() =>
      parseConfig({ channels: { examplechat: { accounts: { a: { region: "mars" } } } } }, "hub.json5", {}, [
        example,
      ]),
    ).toThrow(/channels\.examplechat\.accounts\.a\.region: /);
    // Keys beside an empty `accounts` would run no account at all.
    expect(() =>
      parseConfig({ channels: { examplechat: { apiKey: "k", accounts: {} } } }, "hub.json5", {}, [example]),
    ).toThrow(
      /channels\.examplechat\.accounts: is empty, so no account of this channel would run; remove `accounts`/,
    );
  });

  it("applies each plugin's environment overrides (shorthand, or the `default` account)", () => {
    const env = { EXAMPLECHAT_API_KEY: "from-env" };
    expect(parseConfig({}, "c", env, [example]).channels.examplechat?.accounts.default?.apiKey).toBe(
      "from-env",
    );
    const many = parseConfig(
      { channels: { examplechat: { accounts: { default: {}, b: { apiKey: "b" } } } } },
      "c",
      env,
      [example],
    );
    expect(many.channels.examplechat?.accounts.default?.apiKey).toBe("from-env");
    expect(many.channels.examplechat?.accounts.b?.apiKey).toBe("b");
  });

  it("knows the built-in web chat, and `hub config schema` includes every plugin's schema and accounts", () => {
    const config = parseConfig({ channels: { webchat: {} } }, "c", {}, [example]);
    expect(config.channels.webchat?.accounts.default?.dmPolicy).toBe("open");
    const schema = configJsonSchema([example]) as {
      properties: { channels: { properties: Record<string, { properties: Record<string, unknown> }> } };
    };
    const channels = schema.properties.channels.properties;
    expect(Object.keys(channels)).toEqual(["webchat", "examplechat"]);
    expect(Object.keys(channels.examplechat?.properties ?? {})).toEqual(
      expect.arrayContaining(["apiKey", "region", "dmPolicy", "accounts"]),
    );
  });
});
