import { request } from "node:http";
import { createLogger } from "@hub/core";
import { type FakeTelegram, privateText, startFakeTelegram } from "@hub/fakes";
import { telegramPlugin } from "@hub/telegram";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub, type TestHub } from "../support/hub.js";

const SECRET = "host-check-webhook-secret";
let fake: FakeTelegram;
let hub: TestHub;
beforeAll(async () => {
  fake = await startFakeTelegram();
  const adapter = await telegramPlugin.create(
    telegramPlugin.configSchema.parse({
      botToken: fake.token,
      apiRoot: fake.apiRoot,
      mode: "webhook",
      webhookUrl: "https://hub.example.com/telegram/webhook",
      webhookSecret: SECRET,
    }),
    {
      accountId: "default",
      logger: createLogger({ level: "silent" }),
      state: memoryState(),
      stateDir: "/tmp",
    },
  );
  hub = await startTestHub(
    {
      gateway: { allowedHosts: ["chat.example.org"] },
      channels: { telegram: { dmPolicy: "open", allowFrom: ["*"] } },
    },
    "gwhost",
    [adapter],
  );
});
afterAll(async () => {
  await hub?.dispose();
  await fake?.close();
});

function memoryState() {
  const values = new Map<string, string>();
  return {
    get: async (k: string) => values.get(k),
    set: async (k: string, v: string) => void values.set(k, v),
  };
}

/** An HTTP request to the gateway (on 127.0.0.1) naming `host` in its Host header, as a browser would. */
function send(
  method: "GET" | "POST",
  path: string,
  host: string,
  options: { body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: hub.port,
        method,
        path,
        agent: false,
        headers: { host, "content-type": "application/json", ...options.headers },
      },
      (res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Opens a WebSocket to the gateway with `host` as Host and its own origin; resolves with the HTTP status of a refusal, or 101. */
function upgrade(host: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${hub.port}/`, { headers: { host }, origin: `http://${host}` });
    ws.on("open", () => {
      ws.close();
      resolve(101);
    });
    ws.on("unexpected-response", (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.on("error", () => {});
  });
}

describe("the gateway on loopback answers only to this machine's names (DNS rebinding)", () => {
  it("refuses a page, a probe, /metrics and the control API under another name, saying which key to set", async () => {
    const evil = `rebound.attacker.example:${hub.port}`;
    for (const path of ["/", "/healthz", "/readyz", "/metrics", "/api/control/overview"]) {
      const res = await send("GET", path, evil);
      expect({ path, status: res.status }).toEqual({ path, status: 403 });
      expect(res.body).toContain("gateway.allowedHosts");
    }
  });

  it("answers under localhost, an IP address and a listed name", async () => {
    for (const host of [
      `localhost:${hub.port}`,
      `127.0.0.1:${hub.port}`,
      `[::1]:${hub.port}`,
      `LOCALHOST.:${hub.port}`,
      `chat.example.org:${hub.port}`,
    ]) {
      expect({ host, status: (await send("GET", "/healthz", host)).status }).toEqual({ host, status: 200 });
    }
  });

  it("refuses a WebSocket under another name even when its Origin matches that name; takes it under localhost", async () => {
    expect(await upgrade(`rebound.attacker.example:${hub.port}`)).toBe(403);
    expect(await upgrade(`localhost:${hub.port}`)).toBe(101);
    const client = await GatewayClient.open(hub.port, hub.token);
    expect((await client.request("health", {})).ok).toBe(true);
    client.close();
  });

  it("still takes a platform's webhook under its public name (a reverse proxy keeps the Host)", async () => {
    const update = privateText({ chatId: 4242, fromId: 4242, text: "through the proxy" });
    const res = await send("POST", "/telegram/webhook", "hub.example.com", {
      body: JSON.stringify({ update_id: 1001, ...update }),
      headers: { "x-telegram-bot-api-secret-token": SECRET },
    });
    expect(res.status).toBe(200);
    expect(res.body).not.toContain("gateway.allowedHosts");
  });
});
