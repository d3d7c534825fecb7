import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeDiscord, startFakeDiscord, startFakeOpenAI } from "@hub/fakes";
import { afterEach, describe, expect, it } from "vitest";
import {
  fakeModelEnv,
  freePort,
  type HubProcess,
  startHubProcess,
} from "../../../test/support/hub-process.js";
import { dropPrefix, testPrefix, waitFor } from "../../../test/support/redis.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A hub installation started the README's way: a config file, the token from DISCORD_BOT_TOKEN. */
async function installation(name: string, extra: Record<string, unknown> = {}) {
  const fake = await startFakeDiscord();
  const model = await startFakeOpenAI();
  const prefix = testPrefix(name);
  const stateDir = mkdtempSync(join(tmpdir(), "hub-discord-"));
  const configPath = join(stateDir, "hub.json5");
  writeFileSync(
    configPath,
    JSON.stringify({
      delivery: { leaseMs: 2000, sendTimeoutMs: 1000 },
      ...extra,
      channels: { discord: { restApi: fake.restApi, dmPolicy: "allowlist", allowFrom: [fake.user.id] } },
    }),
  );
  const processes: HubProcess[] = [];
  cleanups.push(async () => {
    for (const p of processes) if (p.child.exitCode === null) await p.kill();
    await fake.close();
    await model.close();
    rmSync(stateDir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });
  const env = {
    HUB_CONFIG: configPath,
    HUB_STATE_DIR: stateDir,
    HUB_REDIS_PREFIX: prefix,
    HUB_GATEWAY_TOKEN: "discord-process-token-0123456789",
    ...fakeModelEnv(model),
    HUB_LANE_LEASE_MS: "1500",
    DISCORD_BOT_TOKEN: fake.token,
  };
  return {
    fake,
    model,
    async start(): Promise<HubProcess> {
      const hub = await startHubProcess(env, await freePort());
      processes.push(hub);
      // Generous: a loaded machine (another test file's hubs starting beside this one) took over 20 s once.
      await waitFor(() => fake.gateway.liveConnections === 1, "the hub's Discord gateway connection", 45_000);
      return hub;
    },
  };
}

const postsTo = (fake: FakeDiscord, channelId: string) =>
  fake.calls.filter(
    (c) => c.method === "POST /channels/:id/messages" && c.route === `/channels/${channelId}/messages`,
  );

describe("discord through a hub process", () => {
  it("a hub started from a config file with DISCORD_BOT_TOKEN answers a DM", async () => {
    const { fake, model, start } = await installation("dc-proc");
    await start();
    model.script({ text: "Hi from the hub." });
    fake.userMessage({ channelId: fake.dmChannelId, content: "hello hub" });
    await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the DM answer", 20_000);
    expect(fake.sent(fake.dmChannelId)[0]?.message.content).toBe("Hi from the hub.");
  }, 60_000);

  it("SIGKILL after Discord created the message but before the hub read the answer: the resend after restart posts nothing new", async () => {
    const { fake, model, start } = await installation("dc-crash");
    const first = await start();
    fake.holdNextResponse("POST /channels/:id/messages");
    model.script({ text: "Posted exactly once." });
    fake.userMessage({ channelId: fake.dmChannelId, content: "crash in the send" });
    await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the message created on Discord", 20_000);
    await new Promise((r) => setTimeout(r, 300));
    await first.kill();
    await start();
    await waitFor(() => postsTo(fake, fake.dmChannelId).length >= 2, "the resend after the restart", 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    const posts = postsTo(fake, fake.dmChannelId);
    const nonces = new Set(posts.map((c) => (c.body as { nonce?: string }).nonce));
    expect(nonces.size).toBe(1);
    expect(fake.sent(fake.dmChannelId).map((m) => m.message.content)).toEqual(["Posted exactly once."]);
  }, 90_000);

  it("a DM that arrives while the hub drains is admitted, not refused: the gateway never sends it again", async () => {
    const { fake, model, start } = await installation("dc-drain", { lifecycle: { drainSeconds: 30 } });
    const first = await start();
    // The first answer streams for about 3 s, so the drain waits for it.
    model.script(
      { text: "A slow first answer that streams for a while.", delayMs: 300 },
      { text: "The late one, answered." },
    );
    fake.userMessage({ channelId: fake.dmChannelId, content: "first" });
    await waitFor(() => model.requests.length === 1, "the first run's model call", 20_000);
    first.child.kill("SIGTERM");
    await first.waitForOutput(/draining: no new work is taken/);
    fake.userMessage({ channelId: fake.dmChannelId, content: "sent during the drain" });
    await first.exited;
    expect(first.child.exitCode).toBe(0);
    // Taken by the draining hub (as the same session's next run there) or after the restart: never lost.
    if (!fake.sent(fake.dmChannelId).some((m) => m.message.content === "The late one, answered."))
      await start();
    await waitFor(
      () => fake.sent(fake.dmChannelId).some((m) => m.message.content === "The late one, answered."),
      "the answer to the message sent during the drain",
      30_000,
    );
    expect(model.requests.length).toBe(2);
    expect(fake.sent(fake.dmChannelId).map((m) => m.message.content)).toEqual([
      "A slow first answer that streams for a while.",
      "The late one, answered.",
    ]);
  }, 120_000);
});
