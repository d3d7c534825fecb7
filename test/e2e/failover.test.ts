import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type FakeAnthropic,
  type FakeOpenAI,
  startFakeAnthropic,
  startFakeOpenAI,
} from "../fakes/src/index.js";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub, type TestHub } from "../support/hub.js";

let hub: TestHub;
let primary: FakeOpenAI;
let fallback: FakeOpenAI;
let claude: FakeAnthropic;
let client: GatewayClient;
beforeAll(async () => {
  primary = await startFakeOpenAI({ apiKey: "good-key" });
  fallback = await startFakeOpenAI();
  claude = await startFakeAnthropic({ apiKey: "claude-key" });
  hub = await startTestHub(
    {
      agent: { model: "main/big", fallbacks: ["backup/small", "smart"] },
      models: {
        providers: {
          // Two auth profiles: the first key is refused, the second works.
          main: { baseUrl: primary.url, apiKeys: ["revoked-key", "good-key"] },
          backup: { baseUrl: fallback.url, apiKey: "k" },
          claude: { api: "anthropic", baseUrl: claude.url, apiKey: "claude-key" },
        },
        aliases: { smart: "claude/sonnet" },
      },
    },
    "failover",
  );
  client = await GatewayClient.open(hub.port, hub.token);
});
afterAll(async () => {
  client.close();
  await hub.dispose();
  await primary.close();
  await fallback.close();
  await claude.close();
});

const history = async (sessionKey: string) =>
  (
    (await client.request("chat.history", { sessionKey })).payload as {
      messages: Array<{ role: string; text: string }>;
    }
  ).messages;

describe("model failover", () => {
  it("rotates to the next auth profile after a 401, and the session advances once", async () => {
    primary.script({ text: "From the good key." });
    const s = "agent:main:webchat:direct:rotate";
    await client.request("chat.send", {
      sessionKey: s,
      text: "rotate please",
      idempotencyKey: "failover-rotate-1",
    });
    expect(await client.terminal("failover-rotate-1")).toMatchObject({
      state: "final",
      text: "From the good key.",
    });
    expect(primary.requests.length).toBe(2); // the refused call, then the good one
    expect(fallback.requests.length).toBe(0);
    expect((await history(s)).map((m) => m.text)).toEqual(["rotate please", "From the good key."]);
  });

  it("falls back to the next model when the primary is overloaded; only the accepted answer is kept", async () => {
    primary.script({ fail: { status: 503 } });
    fallback.script({ text: "From the backup model." });
    const s = "agent:main:webchat:direct:fallback";
    await client.request("chat.send", {
      sessionKey: s,
      text: "fall back please",
      idempotencyKey: "failover-next-1",
    });
    expect(await client.terminal("failover-next-1")).toMatchObject({
      state: "final",
      text: "From the backup model.",
    });
    expect(fallback.requests.at(-1)?.model).toBe("small");
    expect((await history(s)).map((m) => m.text)).toEqual(["fall back please", "From the backup model."]);
    const status = await client.request("chat.send", {
      sessionKey: s,
      text: "/status",
      idempotencyKey: "failover-status-1",
    });
    expect(status.ok).toBe(true);
    expect((await client.terminal("failover-status-1")).text).toMatch(
      /Last model failover \(any chat\): main\/big was overloaded at [\d-]+ [\d:]+ UTC, so the hub moved on to the next model\./,
    );
  });

  it("goes down the whole chain to an Anthropic model named by an alias", async () => {
    primary.script({ fail: { status: 500 } });
    fallback.script({ fail: { status: 529 } });
    claude.script({ text: "From Claude." });
    const s = "agent:main:webchat:direct:chain";
    await client.request("chat.send", {
      sessionKey: s,
      text: "anyone there?",
      idempotencyKey: "failover-chain-1",
    });
    expect(await client.terminal("failover-chain-1")).toMatchObject({ state: "final", text: "From Claude." });
    expect(claude.requests.at(-1)?.model).toBe("sonnet");
    // The system prompt's operator part goes in a block of its own, marked for Anthropic's prompt cache.
    const system = claude.requests.at(-1)?.system as Array<{ text: string; cache_control?: unknown }>;
    expect(system.map((b) => [b.text.split("\n")[0], b.cache_control])).toEqual([
      ["# Identity", { type: "ephemeral" }],
      ["# Channel", undefined],
    ]);
    expect((await history(s)).map((m) => m.text)).toEqual(["anyone there?", "From Claude."]);
  });

  it("surfaces a bad request without trying other models", async () => {
    primary.script({
      fail: { status: 400, body: { error: { message: "bad input", type: "invalid_request_error" } } },
    });
    const before = fallback.requests.length;
    await client.request("chat.send", {
      sessionKey: "agent:main:webchat:direct:bad",
      text: "bad",
      idempotencyKey: "failover-bad-1",
    });
    expect((await client.terminal("failover-bad-1")).state).toBe("error");
    expect(fallback.requests.length).toBe(before);
  });

  it("never fails over after a candidate has streamed: the failure is surfaced, nothing half-written is kept", async () => {
    primary.script({ malformed: true });
    const before = fallback.requests.length;
    const s = "agent:main:webchat:direct:midstream";
    await client.request("chat.send", {
      sessionKey: s,
      text: "break midway",
      idempotencyKey: "failover-mid-1",
    });
    expect((await client.terminal("failover-mid-1")).state).toBe("error");
    expect(fallback.requests.length).toBe(before);
    expect((await history(s)).filter((m) => m.role === "assistant")).toEqual([]);
  });
});
