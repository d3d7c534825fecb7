import { channelPlugins } from "@hub/app";
import { configJsonSchema, parseConfig } from "@hub/core";
import { describe, expect, it } from "vitest";
import { DiscordConfigSchema, discordPlugin, measureWithLines, NONCE_LENGTH, nonceOf } from "../src/index.js";

describe("channels.discord config", () => {
  it("defaults: Discord's API, 2,000 characters, 17 lines, slash commands on, pairing for DMs", () => {
    expect(DiscordConfigSchema.parse({ token: "t" })).toMatchObject({
      restApi: "https://discord.com/api",
      textLimit: 2000,
      maxLinesPerMessage: 17,
      slashCommands: true,
      dmPolicy: "pairing",
      guilds: {},
      groups: {},
    });
  });

  it("guilds let every channel the adapter passes through the shared group policy", () => {
    const c = DiscordConfigSchema.parse({ guilds: { "123456789012345678": { requireMention: false } } });
    expect(c.groups["*"]).toEqual({ requireMention: true, allowFrom: [] });
    expect(() => DiscordConfigSchema.parse({ guilds: { general: {} } })).toThrow(/Discord id/);
    expect(() => DiscordConfigSchema.parse({ textLimit: 4000 })).toThrow();
  });

  it("the hub config takes channels.discord with the token from DISCORD_BOT_TOKEN, and names a typo", () => {
    const config = parseConfig(
      { channels: { discord: { restApi: "http://127.0.0.1:9/api", allowFrom: ["1"] } } },
      "test",
      { DISCORD_BOT_TOKEN: "from-env" },
      channelPlugins,
    );
    expect(config.channels.discord?.accounts.default).toMatchObject({
      token: "from-env",
      restApi: "http://127.0.0.1:9/api",
    });
    expect(() => parseConfig({ channels: { discord: { tokn: "x" } } }, "test", {}, channelPlugins)).toThrow(
      /tokn/,
    );
    // A guild's key must be its id: the error says so, not only "invalid key".
    expect(() =>
      parseConfig({ channels: { discord: { guilds: { "my-server": {} } } } }, "test", {}, channelPlugins),
    ).toThrow(
      'channels.discord.guilds.my-server: the key must be a Discord id (5 to 25 digits) or "*"; rename the key.',
    );
  });

  it("`hub config schema` lists the Discord keys", () => {
    const schema = configJsonSchema(channelPlugins) as {
      properties: { channels: { properties: Record<string, { properties: Record<string, unknown> }> } };
    };
    expect(Object.keys(schema.properties.channels.properties.discord?.properties ?? {})).toEqual(
      expect.arrayContaining(["token", "restApi", "guilds", "maxLinesPerMessage", "dmPolicy", "accounts"]),
    );
  });

  it("an account without a token is a clear error", async () => {
    const config = DiscordConfigSchema.parse({});
    await expect(
      discordPlugin.create(config, {
        accountId: "work",
        logger: { child: () => ({}) } as never,
        state: { get: async () => undefined, set: async () => {} },
        stateDir: "/tmp",
      }),
    ).rejects.toThrow(
      /channels\.discord\.accounts\.work has no bot token; set channels\.discord\.accounts\.work\.token \(/,
    );
  });
});

describe("outbound identity and size", () => {
  it("a segment's nonce is its identity hashed: stable, at most 25 characters, different per segment", () => {
    const a = nonceOf({ replyId: "run-1", index: 0 });
    expect(a).toHaveLength(NONCE_LENGTH);
    expect(nonceOf({ replyId: "run-1", index: 0 })).toBe(a);
    expect(nonceOf({ replyId: "run-1", index: 1 })).not.toBe(a);
    expect(nonceOf({ replyId: "run-10", index: 0 })).not.toBe(nonceOf({ replyId: "run-1", index: 0 }));
  });

  it("a text over the line limit measures over the text limit, in proportion to its lines", () => {
    const measure = measureWithLines(2000, 17);
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `l${i}`).join("\n");
    expect(measure(lines(17))).toBe(lines(17).length);
    expect(measure(lines(18))).toBeGreaterThan(2000);
    expect(measure(lines(34))).toBeGreaterThan(measure(lines(18)));
  });
});
