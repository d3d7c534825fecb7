import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configJsonSchema, createLogger, parseConfig } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { buildChannelAdapters } from "../../../apps/hub/src/adapters.js";
import { channelPlugins } from "../../../apps/hub/src/plugins.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { redisLease } from "../../../test/support/redis-lease.js";
import { authDirOf, leaseKey, WhatsAppConfigSchema, whatsappPlugin } from "../src/index.js";

const prefix = testPrefix("wa-plugin");
const redis = new Redis(REDIS_URL);
const stateDir = mkdtempSync(join(tmpdir(), "wa-plugin-"));
afterAll(async () => {
  rmSync(stateDir, { recursive: true, force: true });
  await dropPrefix(prefix);
  redis.disconnect();
});
const logger = createLogger({ level: "silent" });
const parse = (raw: unknown, env: NodeJS.ProcessEnv = {}) =>
  parseConfig(raw, "hub.json5", env, channelPlugins);

describe("the WhatsApp channel plugin", () => {
  it("builds one linked device per enabled account", async () => {
    const config = parse({
      channels: {
        whatsapp: {
          allowFrom: ["1@s.whatsapp.net"],
          accounts: { shop: {}, home: {}, off: { enabled: false } },
        },
      },
    });
    const adapters = await buildChannelAdapters(config, channelPlugins, { redis, prefix, logger, stateDir });
    expect(adapters.map((a) => [a.channel, a.accountId])).toEqual([
      ["whatsapp", "shop"],
      ["whatsapp", "home"],
    ]);
    expect(adapters[0]?.capabilities).toMatchObject({
      textLimit: 4000,
      markdown: "whatsapp",
      threads: false,
    });
  });

  it("has a default for every key, names a misspelt one, and keeps credentials in the state dir", () => {
    expect(WhatsAppConfigSchema.parse({})).toMatchObject({
      textLimit: 4000,
      maxMessageAgeMs: 600_000,
      sendIntervalMs: 1000,
      groupSendIntervalMs: 2500,
      presence: true,
      leaseMs: 30_000,
    });
    expect(() => parse({ channels: { whatsapp: { textLimt: 100 } } })).toThrow(
      /channels\.whatsapp \(unknown key "textLimt"\)/,
    );
    expect(parse({}, { WHATSAPP_AUTH_DIR: "wa-main" }).channels.whatsapp?.accounts.default?.authDir).toBe(
      "wa-main",
    );
    expect(authDirOf("/state", "shop")).toBe("/state/whatsapp/shop");
    expect(authDirOf("/state", "shop", "links/wa")).toBe("/state/links/wa");
    const schema = configJsonSchema(channelPlugins) as {
      properties: { channels: { properties: Record<string, { properties: Record<string, unknown> }> } };
    };
    expect(Object.keys(schema.properties.channels.properties.whatsapp?.properties ?? {})).toEqual(
      expect.arrayContaining(["authDir", "textLimit", "maxMessageAgeMs", "leaseMs", "accounts", "dmPolicy"]),
    );
  });

  it("an adapter without a link reports logged_out, holds no lease, and closes cleanly", async () => {
    const adapter = await whatsappPlugin.create(WhatsAppConfigSchema.parse({}), {
      accountId: "solo",
      logger,
      state: { get: async () => undefined, set: async () => undefined },
      stateDir,
      redis: { url: REDIS_URL, prefix },
      lease: (ttlMs) => redisLease(new Redis(REDIS_URL), leaseKey(prefix, "solo"), ttlMs),
    });
    await adapter.start(async () => ({ kind: "accepted" }));
    await waitFor(() => adapter.status?.().state === "logged_out", "logged out");
    expect(await redis.exists(leaseKey(prefix, "solo"))).toBe(0);
    await adapter.stop();
    expect(adapter.status?.().state).toBe("stopped");
  });
});
