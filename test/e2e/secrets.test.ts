import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import {
  type FakeOpenAI,
  type FakeTelegram,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { GatewayClient } from "../support/gateway-client.js";
import { freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, testPrefix, waitFor } from "../support/redis.js";

// Every secret the config holds; the sweep at the end looks for each one in all the hub wrote.
const SECRETS = {
  botToken: "987654:AAsecret-bot-token-Zx9",
  webhookSecret: "webhook-secret-0123456789",
  gatewayToken: "owner-gateway-token-0123456789",
  password: "owner-password-0123",
  clientToken: "client-gateway-token-0123456789",
  wrongApiKey: "sk-first-key-that-fails-111",
  rightApiKey: "sk-second-key-that-works-222",
};

/**
 * A Bot API in front of the fake that resets the connection (no HTTP answer at
 * all) for the methods in `reset`, like a network failure: grammY's error then
 * carries the request URL, token included.
 */
async function startResettingProxy(target: string, reset: Map<string, number>): Promise<Server> {
  const server = createServer((req: IncomingMessage, res) => {
    const method = /\/bot[^/]+\/([^/?]+)/.exec(req.url ?? "")?.[1] ?? "";
    const left = reset.get(method) ?? 0;
    if (left > 0) {
      reset.set(method, left - 1);
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      try {
        const upstream = await fetch(`${target}${req.url}`, {
          method: req.method ?? "POST",
          headers: { "content-type": req.headers["content-type"] ?? "application/json" },
          ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
        });
        res.writeHead(upstream.status, { "content-type": "application/json" });
        res.end(Buffer.from(await upstream.arrayBuffer()));
      } catch {
        res.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return server;
}

// The agent role on the main thread, and on a worker thread (its lines have a logger of their own).
describe.each([
  ["on the main thread", "0"],
  ["on an agent thread", "1"],
])("no configured secret in any log line, the agent role %s", (_where, threads) => {
  let telegram: FakeTelegram;
  let model: FakeOpenAI;
  let proxy: Server;
  let hub: HubProcess;
  let stateDir: string;
  let port: number;
  const prefix = testPrefix(`secrets-${threads}`);
  const reset = new Map<string, number>([
    ["getUpdates", 2],
    ["sendMessage", 100],
    ["sendChatAction", 100],
  ]);

  beforeAll(async () => {
    telegram = await startFakeTelegram({ token: SECRETS.botToken });
    model = await startFakeOpenAI({ apiKey: SECRETS.rightApiKey });
    proxy = await startResettingProxy(telegram.apiRoot, reset);
    stateDir = mkdtempSync(join(tmpdir(), "hub-secrets-"));
    const configPath = join(stateDir, "hub.json5");
    writeFileSync(
      configPath,
      JSON.stringify({
        gateway: {
          token: SECRETS.gatewayToken,
          password: SECRETS.password,
          clients: [{ name: "dash", token: SECRETS.clientToken, scopes: ["read", "write"] }],
        },
        agent: { model: "fake/m", offlineTokenDelayMs: 0 },
        models: {
          providers: {
            fake: { baseUrl: model.url, apiKey: SECRETS.wrongApiKey, apiKeys: [SECRETS.rightApiKey] },
          },
        },
        delivery: { maxAttempts: 2 },
        channels: {
          telegram: {
            botToken: SECRETS.botToken,
            webhookSecret: SECRETS.webhookSecret,
            apiRoot: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
            dmPolicy: "allowlist",
            allowFrom: ["4242"],
          },
        },
      }),
    );
    port = await freePort();
    hub = await startHubProcess(
      {
        HUB_CONFIG: configPath,
        HUB_STATE_DIR: stateDir,
        HUB_REDIS_PREFIX: prefix,
        HUB_LOG_LEVEL: "debug",
        HUB_AGENT_THREADS: threads,
      },
      port,
    );
  }, 30_000);

  afterAll(async () => {
    if (hub?.child.exitCode === null) await hub.stop();
    await new Promise<void>((resolve) => proxy?.close(() => resolve()));
    await telegram?.close();
    await model?.close();
    rmSync(stateDir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });

  it("network failures of getUpdates and sendMessage, a failed model key and bad gateway logins leave no secret in the output", async () => {
    const output = () => hub.output.join("");
    await waitFor(() => /getUpdates failed/.test(output()), "a logged getUpdates network failure", 15_000);
    // A message from the allowed user: the first model key is refused, the answer takes long enough for the
    // run to show typing (a call of the agent role, on the agent thread when there is one), which resets as
    // the reply's sendMessage does.
    model.script({ text: "a slow hello", chunkSize: 2, delayMs: 250 });
    telegram.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "hello" }));
    await waitFor(() => model.requests.length >= 2, "the model call with the second key", 15_000);
    await waitFor(() => /failed for good/.test(output()), "the reply's delivery failing for good", 20_000);
    // Gateway logins: a wrong token and a malformed frame are logged; the password and a client token work.
    const wrong = new WebSocket(`ws://127.0.0.1:${port}/`);
    await new Promise<void>((resolve) => wrong.once("open", () => resolve()));
    wrong.send(
      JSON.stringify({
        type: "req",
        id: 1,
        method: "connect",
        params: { auth: { token: `${SECRETS.clientToken}x` } },
      }),
    );
    await new Promise<void>((resolve) => wrong.once("close", () => resolve()));
    // Frames that are not JSON, with a secret where the parser stops: JSON.parse's message quotes the text there.
    for (const raw of [
      SECRETS.gatewayToken,
      `{"type":"req","id":1,"method":"connect","params":{"auth":{"password":${SECRETS.password}}}}`,
    ]) {
      const garbled = new WebSocket(`ws://127.0.0.1:${port}/`);
      await new Promise<void>((resolve) => garbled.once("open", () => resolve()));
      garbled.send(raw);
      await new Promise<void>((resolve) => garbled.once("close", () => resolve()));
    }
    const owner = await GatewayClient.open(port);
    expect((await owner.request("connect", { auth: { password: SECRETS.password } })).ok).toBe(true);
    owner.close();
    const client = await GatewayClient.open(port, SECRETS.clientToken);
    client.close();
    await hub.stop();

    const all = output();
    // The failure paths really ran and were logged (with their URLs), just without the secrets.
    expect(all).toMatch(/getUpdates failed/);
    expect(all).toMatch(/typing indicator failed/);
    expect(all).toMatch(/sendMessage/);
    expect(all).toContain("[redacted]");
    expect(all).toMatch(/malformed frame/);
    for (const secret of [SECRETS.gatewayToken, SECRETS.password])
      expect(all.includes(secret.slice(0, 8)), `the start of ${secret} appears`).toBe(false);
    for (const [name, secret] of Object.entries(SECRETS)) {
      expect(all.includes(secret), `${name} appears in the hub's output`).toBe(false);
      expect(all.includes(encodeURIComponent(secret)), `${name} (URL-encoded) appears`).toBe(false);
    }
  }, 60_000);
});
