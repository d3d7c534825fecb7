import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type FakeDiscord,
  type FakeSlack,
  type FakeTelegram,
  startFakeDiscord,
  startFakeSlack,
  startFakeTelegram,
} from "@hub/fakes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../../../test/support/cli.js";
import { freePort } from "../../../../test/support/hub-process.js";
import { dropPrefix, testPrefix } from "../../../../test/support/redis.js";

interface Check {
  name: string;
  status: "ok" | "warn" | "fail";
  detail: string;
  fix?: string;
}

let stateDir: string;
let prefix: string;
let env: Record<string, string>;
let telegram: FakeTelegram;
let discord: FakeDiscord;
let slack: FakeSlack;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "hub-doctor-"));
  prefix = testPrefix("doctor");
  // No hub runs: doctor checks the credentials against the platforms itself.
  env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix, HUB_GATEWAY_PORT: String(await freePort()) };
  [telegram, discord, slack] = await Promise.all([
    startFakeTelegram(),
    startFakeDiscord({ messageContentAllowed: false }),
    startFakeSlack(),
  ]);
});
afterAll(async () => {
  await Promise.all([telegram.close(), discord.close(), slack.close()]);
  rmSync(stateDir, { recursive: true, force: true });
  await dropPrefix(prefix);
});

async function doctor(
  channels: Record<string, unknown>,
): Promise<{ code: number; checks: Check[]; stderr: string }> {
  const file = join(stateDir, `hub-${Math.random().toString(36).slice(2)}.json5`);
  writeFileSync(file, JSON.stringify({ channels }));
  const r = await runCli(["--config", file, "doctor", "--json"], env, 60_000);
  return { code: r.code, checks: (JSON.parse(r.stdout) as { checks: Check[] }).checks, stderr: r.stderr };
}

/** Calls the fake Bot API as another installation would (e.g. one that set a webhook). */
async function botApi(method: string, params: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${telegram.apiRoot}/bot${telegram.token}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(params),
  });
  expect(((await res.json()) as { ok: boolean }).ok).toBe(true);
}

const find = (checks: Check[], name: string) => checks.find((c) => c.name === name);

describe("hub doctor checks each channel's credentials against its platform", { timeout: 120_000 }, () => {
  it("accepted tokens pass; a bot without the Message Content intent fails with where to enable it", async () => {
    const { code, checks, stderr } = await doctor({
      telegram: { botToken: telegram.token, apiRoot: telegram.apiRoot },
      discord: { token: discord.token, restApi: discord.restApi },
      slack: { botToken: slack.botToken, signingSecret: "s".repeat(32), apiUrl: slack.apiUrl },
    });
    expect(find(checks, "channels.telegram: bot token")).toMatchObject({ status: "ok" });
    expect(find(checks, "channels.telegram: bot token")?.detail).toContain("@");
    expect(find(checks, "channels.telegram: webhook")).toMatchObject({ status: "ok" });
    expect(find(checks, "channels.discord: token")).toMatchObject({ status: "ok" });
    expect(find(checks, "channels.slack: botToken")).toMatchObject({ status: "ok" });
    expect(find(checks, "channels.slack: botToken")?.detail).toContain("Hub Test");
    expect(find(checks, "channels.discord: message content intent")).toMatchObject({ status: "fail" });
    expect(find(checks, "channels.discord: message content intent")?.fix).toContain("Message Content Intent");
    expect(code).toBe(1);
    // The platform checks can take a while: doctor says what it is waiting for.
    expect(stderr).toContain("Checking each channel account with its platform");
  });

  it("refused tokens fail, each naming the key to fix, and no token reaches the output", async () => {
    const file = join(stateDir, "refused.json5");
    const channels = {
      telegram: { accounts: { support: { botToken: "999:WRONG-TOKEN", apiRoot: telegram.apiRoot } } },
      discord: { token: "wrong.discord.token", restApi: discord.restApi },
      slack: { mode: "socket", botToken: "xoxb-wrong", appToken: "xapp-1-wrong", apiUrl: slack.apiUrl },
    };
    writeFileSync(file, JSON.stringify({ channels }));
    const raw = await runCli(["--config", file, "doctor", "--json"], env, 60_000);
    expect(raw.code).toBe(1);
    for (const secret of ["WRONG-TOKEN", "wrong.discord.token", "xoxb-wrong", "xapp-1-wrong"])
      expect(raw.stdout + raw.stderr).not.toContain(secret);
    const checks = (JSON.parse(raw.stdout) as { checks: Check[] }).checks;
    const telegramCheck = find(checks, "channels.telegram.accounts.support: bot token");
    expect(telegramCheck).toMatchObject({ status: "fail" });
    expect(telegramCheck?.detail).toContain("401");
    expect(telegramCheck?.fix).toContain("channels.telegram.accounts.support.botToken");
    expect(find(checks, "channels.discord: token")).toMatchObject({ status: "fail" });
    expect(find(checks, "channels.discord: token")?.fix).toContain("channels.discord.token");
    expect(find(checks, "channels.slack: botToken")?.detail).toContain("invalid_auth");
    expect(find(checks, "channels.slack: appToken")?.detail).toContain("invalid_auth");
  });

  it("a platform API that cannot be reached fails naming the configured address, in the check's own line", async () => {
    const nowhere = "http://127.0.0.1:1";
    const { code, checks, stderr } = await doctor({
      telegram: { botToken: telegram.token, apiRoot: nowhere },
      discord: { token: discord.token, restApi: `${nowhere}/api` },
      slack: { botToken: slack.botToken, signingSecret: "s".repeat(32), apiUrl: `${nowhere}/api/` },
    });
    expect(code).toBe(1);
    for (const name of [
      "channels.telegram: bot token",
      "channels.discord: token",
      "channels.slack: botToken",
    ]) {
      expect(find(checks, name)).toMatchObject({ status: "fail" });
      expect(find(checks, name)?.fix).toContain(nowhere);
    }
    // Nothing but the hub's own lines (no client library's warnings).
    expect(stderr).not.toMatch(/\[WARN\]/);
  });

  it("a webhook left set fails polling; webhook mode reports where Telegram sends the updates", async () => {
    await botApi("setWebhook", { url: "https://elsewhere.example/hook" });
    const polling = await doctor({ telegram: { botToken: telegram.token, apiRoot: telegram.apiRoot } });
    expect(find(polling.checks, "channels.telegram: webhook")).toMatchObject({ status: "fail" });
    expect(find(polling.checks, "channels.telegram: webhook")?.detail).toContain("409");
    const webhookMode = {
      telegram: {
        botToken: telegram.token,
        apiRoot: telegram.apiRoot,
        mode: "webhook",
        webhookUrl: "https://bot.example.com/telegram/webhook",
        webhookSecret: "w".repeat(20),
      },
    };
    const webhook = await doctor(webhookMode);
    const check = find(webhook.checks, "channels.telegram: webhook");
    expect(check).toMatchObject({ status: "fail" });
    expect(check?.detail).toContain("https://elsewhere.example/hook");
    await botApi("setWebhook", { url: "https://bot.example.com/telegram/webhook" });
    const matching = await doctor(webhookMode);
    expect(find(matching.checks, "channels.telegram: webhook")).toMatchObject({ status: "ok" });
    await botApi("deleteWebhook", {});
  });
});
