import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, replyTargetKey } from "@hub/core";
import { PairingStore } from "@hub/dispatch";
import { startSilentServer } from "@hub/fakes";
import { connectProof } from "@hub/gateway";
import { FailedDeliveries } from "@hub/reply";
import { FileSessionStore } from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { runCli } from "../../../../test/support/cli.js";
import { freePort } from "../../../../test/support/hub-process.js";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../../test/support/redis.js";

let stateDir: string;
let prefix: string;
let env: Record<string, string>;
let redis: Redis;
// Each test starts the real CLI several times (a Node process with tsx each); on a loaded machine that takes seconds.
beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "hub-cli-"));
  prefix = testPrefix("cli");
  // No hub answers on this port: commands that need the gateway say so.
  env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix, HUB_GATEWAY_PORT: String(await freePort()) };
  redis = new Redis(REDIS_URL);
});
afterAll(async () => {
  redis.disconnect();
  rmSync(stateDir, { recursive: true, force: true });
  await dropPrefix(prefix);
});

describe("hub config", { timeout: 120_000 }, () => {
  it("validate: 0 for a valid file, 1 naming each wrong key and its fix", async () => {
    const good = join(stateDir, "good.json5");
    writeFileSync(good, "{ agent: { model: 'offline/echo' }, lifecycle: { drainSeconds: 5 } }");
    const ok = await runCli(["--config", good, "config", "validate", "--json"], env);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ valid: true, path: good });
    const bad = join(stateDir, "bad.json5");
    writeFileSync(bad, "{ lifecycle: { drainSecs: 5 }, metrics: { access: 'open' } }");
    const no = await runCli(["--config", bad, "config", "validate"], env);
    expect(no.code).toBe(1);
    expect(no.stderr).toContain("lifecycle");
    expect(no.stderr).toContain("drainSecs");
    expect(no.stderr).toContain("metrics.access");
    // Valid, but no direct message would be answered: said, exit 0.
    const open = join(stateDir, "open.json5");
    writeFileSync(
      open,
      "{ channels: { telegram: { botToken: '1:A', dmPolicy: 'open', allowFrom: ['5'] } } }",
    );
    const warned = await runCli(["--config", open, "config", "validate"], env);
    expect(warned.code).toBe(0);
    expect(warned.stdout).toContain(
      'Warning: channels.telegram.dmPolicy is "open" but channels.telegram.allowFrom has no "*"',
    );
    // What hub start refuses before it starts anything: a model no provider serves, an open gateway without a token.
    const refused = join(stateDir, "refused.json5");
    writeFileSync(refused, "{ agent: { model: 'nosuchprov/x' }, gateway: { host: '0.0.0.0' } }");
    const wont = await runCli(["--config", refused, "config", "validate"], { ...env, HUB_GATEWAY_TOKEN: "" });
    expect(wont.code).toBe(1);
    expect(wont.stderr).toContain("would not start as it is");
    expect(wont.stderr).toContain('provider "nosuchprov" is not configured; add models.providers.nosuchprov');
    expect(wont.stderr).toContain("Refusing to listen on 0.0.0.0 without a gateway token");
    // The environment too: a log level hub start would refuse.
    const loud = await runCli(["--config", good, "config", "validate"], { ...env, HUB_LOG_LEVEL: "verbose" });
    expect(loud.code).toBe(1);
    expect(loud.stderr).toContain("HUB_LOG_LEVEL=verbose is not a log level");
  });

  it("validate: 1 naming each account the hub could not start (a missing token, a mode's missing key)", async () => {
    const file = join(stateDir, "tokenless.json5");
    writeFileSync(
      file,
      `{ channels: {
          telegram: { dmPolicy: 'open', allowFrom: ['*'], mode: 'webhook' },
          slack: { botToken: 'xoxb-1', mode: 'socket' },
          discord: { accounts: { main: { token: 'x' }, spare: { enabled: false } } },
        } }`,
    );
    // The variables that would set the default accounts' keys are not this test's.
    const unset = { TELEGRAM_BOT_TOKEN: "", SLACK_BOT_TOKEN: "", SLACK_APP_TOKEN: "", DISCORD_BOT_TOKEN: "" };
    const r = await runCli(["--config", file, "config", "validate"], { ...env, ...unset });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "channels.telegram is configured without a bot token; set channels.telegram.botToken",
    );
    expect(r.stderr).toContain("Slack socket mode needs channels.slack.appToken");
    expect(r.stderr).toContain("Telegram webhook mode needs channels.telegram.webhookUrl");
    // A disabled account is not started, so it is no problem; one with its token is none either.
    expect(r.stderr).not.toContain("discord");
    writeFileSync(
      file,
      "{ channels: { telegram: { botToken: '1:A', dmPolicy: 'open', allowFrom: ['*'] } } }",
    );
    expect((await runCli(["--config", file, "config", "validate"], { ...env, ...unset })).code).toBe(0);
  });
});

describe("hub doctor", { timeout: 120_000 }, () => {
  it("exits 1 with the fix when the state dir is open to others or Redis does not answer; --json lists every check", async () => {
    const open = mkdtempSync(join(tmpdir(), "hub-cli-open-"));
    chmodSync(open, 0o755);
    const r = await runCli(["doctor"], { ...env, HUB_STATE_DIR: open });
    rmSync(open, { recursive: true, force: true });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/FAIL {2}state directory: .* readable by others/);
    expect(r.stdout).toContain(`fix: chmod 700 ${open}`);
    expect(r.stdout).toMatch(/ok {4}redis: Redis \d/);

    const noRedis = await runCli(["doctor", "--json"], {
      ...env,
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    });
    expect(noRedis.code).toBe(1);
    const report = JSON.parse(noRedis.stdout) as {
      ok: boolean;
      checks: Array<{ name: string; status: string; fix?: string }>;
    };
    expect(report.ok).toBe(false);
    expect(report.checks.find((c) => c.name === "redis")).toMatchObject({ status: "fail" });
    expect(report.checks.find((c) => c.name === "redis")?.fix).toMatch(/start Redis/);
    // The hub is not running: channel credentials are not checked, and doctor says so.
    expect(report.checks.find((c) => c.name === "channels")).toMatchObject({ status: "warn" });
  });

  it("fails, saying so, when something takes the gateway's connections and never answers (a frozen hub)", async () => {
    // Frozen before the WebSocket handshake (a silent TCP server), and after it (one that never answers connect).
    const frozen = await startSilentServer();
    const mute = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise((resolve) => mute.once("listening", resolve));
    try {
      for (const port of [frozen.port, (mute.address() as { port: number }).port]) {
        const r = await runCli(["doctor"], { ...env, HUB_GATEWAY_PORT: String(port) });
        expect(r.code).toBe(1);
        expect(r.stdout).toContain(`takes connections at 127.0.0.1:${port}`);
        expect(r.stdout).toContain("did not answer within 5 s");
        expect(r.stdout).not.toContain("not running");
      }
    } finally {
      await frozen.close();
      for (const client of mute.clients) client.terminate();
      await new Promise((resolve) => mute.close(resolve));
    }
  });

  it("never sends the token to whatever took the gateway's port: it proves it for that connection's nonce only", async () => {
    // A program listening on the gateway's port while the hub is down records every frame it is sent.
    const impostor = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise((resolve) => impostor.once("listening", resolve));
    const received: string[] = [];
    const nonce = "impostor-nonce";
    impostor.on("connection", (ws) =>
      ws.on("message", (data) => {
        received.push(data.toString());
        const { id, method } = JSON.parse(data.toString()) as { id: number; method: string };
        const answer = method === "connect.challenge" ? { ok: true, payload: { nonce } } : { ok: false };
        ws.send(JSON.stringify({ type: "res", id, ...answer, error: { code: "x", message: "no" } }));
      }),
    );
    const token = "cli-owner-token-0123456789abcdef";
    try {
      const port = (impostor.address() as { port: number }).port;
      const r = await runCli(["channels", "status"], {
        ...env,
        HUB_GATEWAY_PORT: String(port),
        HUB_GATEWAY_TOKEN: token,
      });
      expect(r.code).toBe(1);
      expect(received.map((f) => JSON.parse(f).method)).toEqual(["connect.challenge", "connect"]);
      expect(received.join("\n")).not.toContain(token);
      expect(JSON.parse(received[1] as string).params).toEqual({
        auth: { proof: connectProof(token, nonce) },
      });
    } finally {
      for (const client of impostor.clients) client.terminate();
      await new Promise((resolve) => impostor.close(resolve));
    }
  });

  it("passes (exit 0) on a healthy installation", async () => {
    const r = await runCli(["doctor"], env);
    expect(r.stdout).not.toContain("FAIL");
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      "(from the config, the state directory, Redis, each channel's platform and the gateway",
    );
  });
});

describe("hub pairing", { timeout: 120_000 }, () => {
  it("list shows pending codes (JSON too); deny drops one; approve lets one in; unknown codes exit 1", async () => {
    const store = new PairingStore(redis, prefix);
    const target = (chatId: string) => ({ channel: "telegram", accountId: "default", chatId });
    const a = await store.request({
      channel: "telegram",
      accountId: "default",
      senderId: "501",
      replyTarget: target("501"),
    });
    const b = await store.request({
      channel: "telegram",
      accountId: "default",
      senderId: "502",
      replyTarget: target("502"),
    });
    const codeA = (a as { code: string }).code;
    const codeB = (b as { code: string }).code;
    const list = await runCli(["pairing", "list", "--json"], env);
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout).pending as Array<{ code: string }>).map((p) => p.code).sort()).toEqual(
      [codeA, codeB].sort(),
    );
    expect(list.stderr).toContain("Redis");
    const denied = await runCli(["pairing", "deny", "telegram", codeA], env);
    expect(denied.code).toBe(0);
    expect(denied.stderr).toContain(`(from Redis ${prefix}:pairing:*)`);
    expect(await store.isApproved("telegram", "default", "501")).toBe(false);
    const approved = await runCli(["pairing", "approve", "telegram", codeB], env);
    expect(approved.stdout).toContain("Approved sender 502");
    expect(approved.stderr).toContain(`(from Redis ${prefix}:pairing:*;`);
    expect(await store.isApproved("telegram", "default", "502")).toBe(true);
    expect((await runCli(["pairing", "list"], env)).stdout).toContain("No senders are waiting");
    const unknown = await runCli(["pairing", "approve", "telegram", codeA], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('run "hub pairing list"');
  });
});

describe("what a stranger wrote, printed by the CLI", { timeout: 120_000 }, () => {
  // ESC starts terminal control sequences (colours, the window title, the clipboard with OSC 52, links).
  const ESC = "\u001b";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must not be printed
  const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
  it("pairing list: a sender's name cannot drive the terminal or add a line of its own", async () => {
    const store = new PairingStore(redis, prefix);
    const forged = `Eve${ESC}]0;owned\u0007${ESC}[2K\r\ntelegram  AAAA1111  sender 1 (Owner)  0 min ago\u009b31m`;
    await store.request({
      channel: "telegram",
      accountId: "default",
      senderId: "666",
      senderName: forged,
      replyTarget: { channel: "telegram", accountId: "default", chatId: "666" },
    });
    const list = await runCli(["pairing", "list"], env);
    expect(list.stdout).not.toMatch(CONTROLS);
    const lines = list.stdout.trim().split("\n");
    expect(lines.filter((l) => l.includes("sender 666"))).toHaveLength(1);
    expect(lines.some((l) => l.startsWith("telegram  AAAA1111"))).toBe(false);
    await store.deny("telegram", (await store.list())[0]!.code);
  });

  it("sessions show: a message cannot drive the terminal or pass for another entry", async () => {
    const ownDir = mkdtempSync(join(tmpdir(), "hub-cli-terminal-"));
    const sessions = new FileSessionStore(ownDir, createLogger({ level: "silent" }));
    const key = "agent:main:whatsapp:direct:666";
    const record = await sessions.resolve(key);
    await sessions.append(record.sessionId, [
      { type: "user", runId: "run-e", text: "hi", senderName: `Eve${ESC}[8m`, at: Date.now() },
      {
        type: "assistant",
        runId: "run-e",
        text: `ok${ESC}]52;c;cm0gLXJmIH4=\u0007\n  [outcome] run run-e succeeded`,
        at: Date.now(),
      },
    ]);
    const show = await runCli(["sessions", "show", key], { ...env, HUB_STATE_DIR: ownDir });
    rmSync(ownDir, { recursive: true, force: true });
    expect(show.stdout).toContain("[assistant] ok");
    expect(show.stdout).not.toMatch(CONTROLS);
    expect(show.stdout).not.toMatch(/^ {2}\[outcome\]/m);
  });
});

describe("hub deliveries", { timeout: 120_000 }, () => {
  it("failed lists given-up segments; retry queues them again for ordered delivery and empties the list", async () => {
    const failed = new FailedDeliveries(redis, prefix);
    const target = { channel: "telegram", accountId: "default", chatId: "900" };
    await failed.record(
      { replyId: "r1", index: 0, text: "first lost segment", target },
      new Error("platform answered 500"),
    );
    await failed.record(
      { replyId: "r2", index: 0, text: "second lost segment", target },
      new Error("platform answered 500"),
    );
    // Without a telegram channel in the config, nothing is queued: it would only fail again.
    const refused = await runCli(["deliveries", "retry"], env);
    expect(refused.stdout).toContain("Nothing to retry");
    expect(refused.stderr).toContain('No channel "telegram" is configured');
    expect(refused.code).toBe(1);
    expect(await failed.list()).toHaveLength(2);
    const config = join(stateDir, "deliveries.json5");
    writeFileSync(config, "{ channels: { telegram: { botToken: '123:abc' } } }");
    const withTelegram = { ...env, HUB_CONFIG: config };
    const list = await runCli(["deliveries", "failed", "--json"], env);
    const entries = JSON.parse(list.stdout) as Array<{ id: string; text: string; error: string }>;
    expect(entries.map((e) => e.text)).toEqual(["second lost segment", "first lost segment"]);
    expect(entries[0]?.error).toContain("500");
    const retry = await runCli(["deliveries", "retry", entries[1]!.id, "deadbeef"], withTelegram);
    expect(retry.stdout).toContain(`Queued 1 segment(s) again: ${entries[1]!.id}`);
    // A typo'd id is said, not passed over.
    expect(retry.stderr).toContain("Not retried: deadbeef: no failed delivery has this id");
    expect(retry.code).toBe(1);
    expect(retry.stderr).toContain(`(from Redis ${prefix}:deliveries:failed`);
    expect((await failed.list()).map((e) => e.text)).toEqual(["second lost segment"]);
    const queued = await redis.lrange(`${prefix}:mb:reply:q:${replyTargetKey(target)}`, 0, -1);
    expect(queued.join("")).toContain("first lost segment");
    const rest = await runCli(["deliveries", "retry"], withTelegram);
    expect([rest.code, rest.stdout]).toEqual([0, expect.stringContaining("Queued 1 segment(s)")]);
    expect((await runCli(["deliveries", "failed"], env)).stdout).toContain("No failed deliveries.");
    // A message's later lines are indented under it: none can pass for a line of the listing.
    await failed.record(
      { replyId: "r3", index: 0, text: "first line\nr9  2026-01-01T00:00:00.000Z  fake entry", target },
      new Error("platform answered 500"),
    );
    const listed = (await runCli(["deliveries", "failed"], env)).stdout.split("\n");
    expect(listed).toContain("      r9  2026-01-01T00:00:00.000Z  fake entry");
    expect(listed.filter((l) => l.startsWith("r9"))).toEqual([]);
    // The list left empty for the tests after this one.
    expect((await runCli(["deliveries", "retry"], withTelegram)).code).toBe(0);
  });
});

describe("hub sessions", { timeout: 120_000 }, () => {
  it("list, show (transcript) and reset (new transcript) read the state directory", async () => {
    const sessions = new FileSessionStore(stateDir, createLogger({ level: "silent" }));
    const key = "agent:main:telegram:direct:42";
    const record = await sessions.resolve(key);
    await sessions.append(record.sessionId, [
      { type: "user", runId: "run-1", text: "hello from 42", at: Date.now() },
      { type: "outcome", runId: "run-1", status: "failed", error: "the model refused", at: Date.now() },
    ]);
    const list = await runCli(["sessions", "list", "--json"], env);
    expect(JSON.parse(list.stdout)).toEqual([
      expect.objectContaining({ sessionKey: key, sessionId: record.sessionId }),
    ]);
    const show = await runCli(["sessions", "show", key], env);
    expect(show.stdout).toContain("[user] hello from 42");
    expect(show.stdout).toContain("[outcome] run run-1 failed: the model refused");
    expect(show.stdout).toMatch(/\[session\] transcript started \d{4}-/);
    // --limit: the last n entries; a value that is no count is refused, not read as "all" or "all but one".
    const last = await runCli(["sessions", "show", key, "--limit", "1"], env);
    expect(last.stdout).toContain("[outcome] run run-1 failed: the model refused");
    expect(last.stdout).not.toContain("[user] hello from 42");
    for (const limit of ["-1", "abc", "0"]) {
      const refused = await runCli(["sessions", "show", key, "--limit", limit], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`--limit must be a whole number above 0, not "${limit}".`);
    }
    // The session's claim generation, as a hub's run left it: the new transcript starts with it (a run frozen
    // before its first write, woken into the new transcript, is then a late writer there too).
    await redis.hset(`${prefix}:writer:${key}`, "generation", "1796585299897");
    const reset = await runCli(["sessions", "reset", key], env);
    expect(reset.code).toBe(0);
    const after = await sessions.get(key);
    expect(after?.sessionId).not.toBe(record.sessionId);
    expect(reset.stdout).toContain(after!.sessionId);
    expect(await sessions.read(after!.sessionId)).toMatchObject([
      { type: "session" },
      { type: "writer", writer: "/new#1796585299897" },
    ]);
    expect(await redis.hget(`${prefix}:writer:${key}`, "touched")).toBe("1");
    expect((await runCli(["sessions", "show", key], env)).stdout).toContain(
      "[writer] the transcript was started anew (claims older than this are late ones)",
    );
    const missing = await runCli(["sessions", "show", "agent:main:nope"], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('run "hub sessions list"');
  });
});

describe("a state directory the hub cannot use", { timeout: 120_000 }, () => {
  it("is one sentence naming the path and what to do, not a stack trace", async () => {
    const file = join(stateDir, "not-a-directory");
    writeFileSync(file, "");
    const r = await runCli(["sessions", "list"], { ...env, HUB_STATE_DIR: file });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `hub: Cannot mkdir ${file}/sessions: a part of the path is a file, not a directory`,
    );
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });
});

describe("hub status and channels", { timeout: 120_000 }, () => {
  it("without a running hub: status says so, still reports Redis and exits 3; channels status exits 1 with what to do", async () => {
    const status = await runCli(["status", "--json"], env);
    expect(status.code).toBe(3);
    expect(status.stderr).toContain('hub: no hub process is running; start one with "npm start".');
    expect(JSON.parse(status.stdout)).toMatchObject({
      running: false,
      channels: [],
      failedDeliveries: 0,
      processes: [],
      missingRoles: ["ingress", "agent", "delivery"],
    });
    const text = await runCli(["status"], env);
    expect(text.stdout).toContain("Processes: 0");
    expect(text.stdout).toContain(
      "no running process has the delivery role: the reply queue waits; start one (HUB_ROLES=delivery).",
    );
    const channels = await runCli(["channels", "status"], env);
    expect(channels.code).toBe(1);
    expect(channels.stderr).toContain('start it with "npm start"');
    const typo = await runCli(["statsu"], env);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('"statsu" is not a hub command (commands: start, status, doctor,');
    const login = await runCli(["channels", "login", "telegram"], env);
    expect(login.code).toBe(1);
    expect(login.stderr).toContain("has no interactive login");
  });
});

describe("hub send", { timeout: 120_000 }, () => {
  it("refuses a channel or account the config does not have, at once and without queuing anything", async () => {
    const queued = async () => (await redis.keys(`${prefix}:mb:reply:*`)).sort();
    const before = await queued();
    const unknown = await runCli(["send", "telegram", "4711", "hello", "--timeout", "2"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No channel "telegram" is configured (configured: webchat)');
    const config = join(stateDir, "send.json5");
    writeFileSync(config, "{ channels: { telegram: { botToken: '123:abc' } } }");
    const account = await runCli(
      ["--config", config, "send", "telegram", "4711", "hello", "--account", "other", "--timeout", "2"],
      env,
    );
    expect(account.code).toBe(1);
    expect(account.stderr).toContain('channels.telegram has no account "other" (accounts: default)');
    // A timeout that is no number of seconds is refused before anything is queued.
    const bad = await runCli(["send", "webchat", "owner", "hello", "--timeout", "abc"], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      '--timeout must be a number of seconds above 0, not "abc"; nothing was sent.',
    );
    expect(await queued()).toEqual(before);
  });
});

describe("commands that need Redis", { timeout: 120_000 }, () => {
  it("say at once that Redis does not answer and what to do, instead of waiting forever", async () => {
    const down = { ...env, REDIS_URL: `redis://127.0.0.1:${await freePort()}` };
    const runs = await Promise.all(
      [
        ["status"],
        ["pairing", "list"],
        ["deliveries", "failed"],
        ["deliveries", "retry"],
        ["send", "webchat", "owner", "hello"],
      ].map((args) => runCli(args, down, 30_000)),
    );
    for (const r of runs) {
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/hub: Redis at redis:\/\/127\.0\.0\.1:\d+ does not answer \(.+\); start it/);
      expect(r.stderr).toContain("set REDIS_URL / redis.url to the hub's Redis");
    }
    // status still says what it knows without Redis (the gateway's channel states).
    expect(runs[0]?.stdout).toContain("Hub: not answering on its gateway");
    expect(runs[0]?.stdout).toContain(
      "Runs in flight, queues and failed deliveries: unknown (Redis does not answer)",
    );
    // With a cluster's seeds the URL is not used: the fix names redis.cluster, not REDIS_URL.
    const file = join(stateDir, "cluster.json5");
    writeFileSync(file, `{ redis: { cluster: ['redis://127.0.0.1:${await freePort()}'] } }`);
    const cluster = await runCli(
      ["--config", file, "status"],
      { ...env, REDIS_URL: "http://not-used" },
      30_000,
    );
    expect(cluster.code).toBe(1);
    expect(cluster.stderr).toContain("set redis.cluster to the hub's Redis");
    // A password in the URL is never printed, by any command.
    const secret = { ...down, REDIS_URL: `redis://:SuperSecretPw123@127.0.0.1:${await freePort()}` };
    const withSecret = await Promise.all(
      [["status"], ["sessions", "list"], ["sessions", "reset", "agent:main:x"]].map((args) =>
        runCli(args, { ...secret, HUB_SESSIONS_STORE: "redis" }, 30_000),
      ),
    );
    for (const r of withSecret) expect(r.stdout + r.stderr).not.toContain("SuperSecretPw123");
    expect(withSecret[1]?.stderr).toContain("(from Redis redis://***@127.0.0.1");
  });
});
