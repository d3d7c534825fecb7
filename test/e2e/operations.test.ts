import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { channelPlugins, redisStateStore } from "@hub/app";
import { createLogger } from "@hub/core";
import { startFakeOpenAI, startFakeTelegram } from "@hub/fakes";
import { telegramPlugin } from "@hub/telegram";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { GatewayClient } from "../support/gateway-client.js";
import { type FakeWorld, startFakeWorld, startTestHub } from "../support/hub.js";
import { freePort } from "../support/hub-process.js";
import { REDIS_URL, waitFor } from "../support/redis.js";

const TOKEN = "test-token-0123456789abcdef";

/** The value of one sample in a Prometheus text exposition (0 when absent). */
function sample(text: string, name: string, labels = ""): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ""} `));
  return line ? Number(line.split(" ").pop()) : 0;
}

describe("readiness and metrics on a hub with a fake platform", () => {
  let world: FakeWorld;
  beforeAll(async () => {
    world = await startFakeWorld("ops", { telegram: { dmPolicy: "allowlist", allowFrom: ["1"] } });
  });
  afterAll(async () => world.dispose());

  it("/healthz and /readyz answer 200 when Redis and every channel are up", async () => {
    expect((await fetch(`${world.hub.url}healthz`)).status).toBe(200);
    const ready = await fetch(`${world.hub.url}readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, reasons: [] });
  });

  it("/metrics (loopback) counts inbound by channel and outcome, runs by outcome, run duration, deliveries and 429s", async () => {
    const client = await GatewayClient.open(world.hub.port, TOKEN);
    const sent = await client.request("chat.send", { text: "count me", idempotencyKey: "ops-run-1" });
    expect(sent.ok).toBe(true);
    expect(await client.terminal("ops-run-1")).toMatchObject({ state: "final" });
    client.close();
    // A 429 from the platform, then success: one rate-limited failure counted, the message still delivered.
    world.platform.fail({ status: 429, retryAfterSeconds: 0 });
    await world.hub.dispatcher!.dispatchInboundMessage({
      channel: "telegram",
      messageId: "m-1",
      chat: { type: "direct", id: "1" },
      sender: { id: "1", name: "One" },
      body: "hello from telegram",
      timestamp: Date.now(),
    });
    await waitFor(() => world.platform.messages.some((m) => m.chatId === "1"), "the telegram answer");
    const res = await fetch(`${world.hub.url}metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(sample(text, "hub_inbound_messages_total", 'channel="webchat",outcome="answered"')).toBe(1);
    expect(sample(text, "hub_runs_total", 'outcome="completed"')).toBeGreaterThanOrEqual(2);
    expect(sample(text, "hub_run_duration_seconds_count")).toBeGreaterThanOrEqual(2);
    expect(sample(text, "hub_model_first_token_seconds_count")).toBeGreaterThanOrEqual(1);
    expect(sample(text, "hub_delivery_seconds_count", 'channel="telegram"')).toBeGreaterThanOrEqual(1);
    expect(sample(text, "hub_delivery_failures_total", 'channel="telegram",kind="rate_limited"')).toBe(1);
    expect(text).toContain('hub_queue_depth{queue="reply"}');
    expect(text).toContain("hub_failed_deliveries 0");
    expect(text).toContain("hub_active_sessions");
    expect(text).toContain("process_resident_memory_bytes");
  });

  it("hub status and hub send talk to the running hub (gateway with the token, Redis)", {
    timeout: 90_000,
  }, async () => {
    // The CLI reads the hub's config file: `hub send` refuses a channel that file does not configure.
    const config = join(world.hub.stateDir, "cli-hub.json5");
    writeFileSync(config, "{ channels: { telegram: { dmPolicy: 'allowlist', allowFrom: ['1'] } } }");
    const env = {
      HUB_CONFIG: config,
      HUB_GATEWAY_PORT: String(world.hub.port),
      HUB_GATEWAY_TOKEN: TOKEN,
      HUB_REDIS_PREFIX: world.hub.prefix,
      HUB_STATE_DIR: world.hub.stateDir,
    };
    const status = await runCli(["status", "--json"], env);
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout) as {
      running: boolean;
      channels: Array<{ channel: string; status: { state: string } }>;
      processes: Array<{ pid: number; roles: string[] }>;
      missingRoles: string[];
    };
    expect(parsed.running).toBe(true);
    // The hub announces itself and its roles in Redis: no role is missing.
    expect(parsed.processes).toEqual([
      expect.objectContaining({ pid: process.pid, roles: ["ingress", "agent", "delivery"] }),
    ]);
    expect(parsed.missingRoles).toEqual([]);
    expect(parsed.channels).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          channel: "telegram",
          status: expect.objectContaining({ state: "connected" }),
        }),
        expect.objectContaining({
          channel: "webchat",
          status: expect.objectContaining({ state: "connected" }),
        }),
      ]),
    );
    expect(status.stderr).toContain("gateway");
    const send = await runCli(["send", "telegram", "4242", "a note from the operator"], env);
    expect(send.stdout).toContain("Delivered to telegram 4242");
    expect(send.code).toBe(0);
    // Unquoted words are one text, as `hub chat` takes them.
    const words = await runCli(["send", "telegram", "4242", "unquoted", "words"], env);
    expect(words.code, words.stderr).toBe(0);
    expect(world.platform.messages.filter((m) => m.chatId === "4242").map((m) => m.text)).toEqual([
      "a note from the operator",
      "unquoted words",
    ]);
  });

  it("SIGHUP's reload applies a changed allowlist to the running hub; an invalid file changes nothing", async () => {
    const dm = (sender: string, id: string) =>
      world.hub.dispatcher!.dispatchInboundMessage({
        channel: "telegram",
        messageId: id,
        chat: { type: "direct", id: sender },
        sender: { id: sender, name: `User ${sender}` },
        body: "may I?",
        timestamp: Date.now(),
      });
    expect((await dm("2", "r-1")).status).not.toBe("accepted");
    const path = join(world.hub.stateDir, "hub.json5");
    writeFileSync(path, "{ channels: { telegram: { dmPolicy: 'allowlist', allowFrom: ['1', '2'] } } }");
    expect(world.hub.operations.reload(path, channelPlugins)).toBe(true);
    expect((await dm("2", "r-2")).status).toBe("accepted");
    writeFileSync(path, "{ channels: { telegram: { dmPolicy: 'sometimes' } } }");
    expect(world.hub.operations.reload(path, channelPlugins)).toBe(false);
    expect((await dm("2", "r-3")).status).toBe("accepted");
  });
});

describe("readiness with a channel down, and metrics behind a token", () => {
  it("/readyz answers 503 naming the channel that is not connected; /metrics wants the bearer token", async () => {
    const redis = new Redis(REDIS_URL);
    const logger = createLogger({ level: "silent" });
    const model = await startFakeOpenAI();
    const telegram = await startFakeTelegram({ token: "1:UP" });
    const down = await freePort();
    const make = (accountId: string, botToken: string, apiRoot: string) =>
      telegramPlugin.create(telegramPlugin.configSchema.parse({ botToken, apiRoot }), {
        accountId,
        logger,
        state: redisStateStore(redis, `ops-${accountId}`),
        stateDir: "/tmp",
      });
    const hub = await startTestHub(
      {
        agent: { model: "fake/m" },
        models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
        channels: { telegram: { dmPolicy: "open", allowFrom: ["*"], accounts: { up: {}, down: {} } } },
        metrics: { access: "token", token: "scraper-token-0123456789" },
      },
      "ops-down",
      await Promise.all([
        make("up", telegram.token, telegram.apiRoot),
        make("down", "2:DOWN", `http://127.0.0.1:${down}`),
      ]),
      logger,
    );
    try {
      const res = await fetch(`${hub.url}readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { ready: boolean; reasons: string[] };
      expect(body.ready).toBe(false);
      expect(body.reasons).toHaveLength(1);
      expect(body.reasons[0]).toMatch(/^channel telegram \(account down\) is reconnecting: /);
      expect((await fetch(`${hub.url}healthz`)).status).toBe(200);

      expect((await fetch(`${hub.url}metrics`)).status).toBe(401);
      const wrong = await fetch(`${hub.url}metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(wrong.status).toBe(401);
      const right = await fetch(`${hub.url}metrics`, {
        headers: { authorization: "Bearer scraper-token-0123456789" },
      });
      expect(right.status).toBe(200);
      expect(await right.text()).toContain("hub_inbound_messages_total");

      hub.operations.startDraining();
      const draining = (await (await fetch(`${hub.url}readyz`)).json()) as { reasons: string[] };
      expect(draining.reasons).toContain("the hub is shutting down");
    } finally {
      await hub.dispose();
      await telegram.close();
      await model.close();
      redis.disconnect();
    }
  });
});
