import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ChannelAdapter, createLogger, type ReplyTarget, typingDelayOf } from "@hub/core";
import { afterAll, describe, expect, it } from "vitest";
import { channelPlugins } from "../src/plugins.js";

// What every channel plugin does alike for its sends: `channels.<name>.pacing` (the platform's limits
// by default, each overridable, 0 turning a limit off for a self-hosted or test platform that does not
// throttle), and typing only once a run has taken about a second.

const stateDir = mkdtempSync(join(tmpdir(), "pacing-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

/** Each plugin's least config that builds an account, and a direct chat of it. */
const CHANNELS: Record<string, { config: Record<string, unknown>; direct: string }> = {
  telegram: { config: { botToken: "1:T" }, direct: "42" },
  discord: { config: { token: "discord-token" }, direct: "123456789012345678" },
  slack: { config: { botToken: "xoxb-1", signingSecret: "secret" }, direct: "D0123" },
  whatsapp: { config: {}, direct: "4915112345678@s.whatsapp.net" },
};

async function build(
  name: string,
  pacing?: Record<string, number>,
  more: Record<string, unknown> = {},
): Promise<ChannelAdapter> {
  const plugin = channelPlugins.find((p) => p.name === name);
  const channel = CHANNELS[name];
  if (!plugin || !channel) throw new Error(`no plugin ${name}`);
  const raw = { ...channel.config, ...more, ...(pacing ? { pacing } : {}) };
  return plugin.create(plugin.configSchema.parse(raw), {
    accountId: "default",
    logger: createLogger({ level: "silent" }),
    state: { get: async () => undefined, set: async () => {} },
    stateDir,
  });
}

/** How long a send to the channel's direct chat waits after the last one. */
function chatInterval(adapter: ChannelAdapter, name: string): number | undefined {
  const target: ReplyTarget = { channel: name, accountId: "default", chatId: CHANNELS[name]?.direct ?? "" };
  return adapter.sendIntervalMs?.(target) ?? adapter.capabilities.minSendIntervalMs;
}

describe("channels.<name>.pacing", () => {
  it("covers every channel plugin", () => {
    expect(channelPlugins.map((p) => p.name).sort()).toEqual(Object.keys(CHANNELS).sort());
  });

  for (const name of Object.keys(CHANNELS)) {
    it(`${name}: keeps the platform's limits by default, and 0 turns each off`, async () => {
      const platform = await build(name);
      expect(chatInterval(platform, name)).toBeGreaterThan(0);
      expect(platform.capabilities.maxSendsPerSecond).toBeGreaterThan(0);
      const off = await build(name, { chatIntervalMs: 0, maxSendsPerSecond: 0 });
      expect(chatInterval(off, name)).toBe(0);
      expect(off.capabilities.minSendIntervalMs).toBe(0);
      expect(off.capabilities.maxSendsPerSecond).toBe(0);
      const slower = await build(name, { chatIntervalMs: 2500, maxSendsPerSecond: 3 });
      expect(chatInterval(slower, name)).toBe(2500);
      expect(slower.capabilities.maxSendsPerSecond).toBe(3);
    });
  }

  it("every channel shows typing only once a run has taken about a second (typing is a platform call)", async () => {
    for (const name of Object.keys(CHANNELS)) {
      const { capabilities } = await build(name);
      expect(capabilities.typing, name).toBe(true);
      expect(typingDelayOf(capabilities), name).toBeGreaterThanOrEqual(1000);
    }
  });

  it("refuses groupIntervalMs where the platform limits every chat alike, and unknown keys everywhere", () => {
    for (const plugin of channelPlugins) {
      const config = CHANNELS[plugin.name]?.config ?? {};
      const group = plugin.configSchema.safeParse({ ...config, pacing: { groupIntervalMs: 100 } }).success;
      expect(group, plugin.name).toBe(plugin.name === "telegram" || plugin.name === "whatsapp");
      expect(plugin.configSchema.safeParse({ ...config, pacing: { perChat: 5 } }).success, plugin.name).toBe(
        false,
      );
    }
  });

  it("whatsapp: pacing's intervals win over sendIntervalMs and groupSendIntervalMs", async () => {
    const adapter = await build(
      "whatsapp",
      { groupIntervalMs: 100 },
      { sendIntervalMs: 4000, groupSendIntervalMs: 6000 },
    );
    const target = (chatId: string): ReplyTarget => ({ channel: "whatsapp", accountId: "default", chatId });
    expect(adapter.sendIntervalMs?.(target("4915112345678@s.whatsapp.net"))).toBe(4000);
    expect(adapter.sendIntervalMs?.(target("120363000000000000@g.us"))).toBe(100);
  });
});
