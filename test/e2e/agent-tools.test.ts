import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger } from "@hub/core";
import { FileSessionStore, RunRecords } from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeWorld, startFakeWorld } from "../support/hub.js";
import { REDIS_URL, waitFor } from "../support/redis.js";

let world: FakeWorld;
let site: Server;
let siteUrl = "";
let redis: Redis;
beforeAll(async () => {
  site = createServer((req, res) => {
    if (req.url === "/moved") return void res.writeHead(302, { location: "http://evil.example/" }).end();
    if (req.url === "/slow") return void setTimeout(() => res.writeHead(200).end("slow page"), 600);
    res.writeHead(200, { "content-type": "text/plain" }).end("hello from the allowed site");
  });
  await new Promise<void>((r) => site.listen(0, "127.0.0.1", () => r()));
  const sitePort = (site.address() as AddressInfo).port;
  siteUrl = `http://127.0.0.1:${sitePort}`;
  world = await startFakeWorld(
    "agenttools",
    { telegram: { dmPolicy: "allowlist", allowFrom: ["7"] } },
    {
      agent: {
        tools: {
          httpFetchHosts: ["127.0.0.1"],
          // The test site runs on loopback, which http_fetch refuses unless allowed.
          httpFetchAllowPrivate: true,
          httpFetchPorts: [sitePort],
          sendTargets: { ops: { channel: "telegram", chatId: "-100ops" } },
        },
      },
    },
  );
  redis = new Redis(REDIS_URL);
});
afterAll(async () => {
  await world.dispose();
  site.close();
  redis.disconnect();
});

let n = 100;
async function dm(text: string): Promise<string> {
  const r = await world.hub.dispatcher!.dispatchInboundMessage({
    channel: "telegram",
    messageId: String(n++),
    chat: { type: "direct", id: "7" },
    sender: { id: "7" },
    body: text,
    timestamp: Date.now(),
  });
  const runId = (r as { runId: string }).runId;
  await waitFor(
    async () => (await new RunRecords(redis, world.hub.prefix).get(runId))?.status === "completed",
    "run completed",
    15_000,
  );
  return runId;
}
const lastToolResults = () =>
  (world.model.requests.at(-1)!.messages as Array<{ role: string; content: string }>)
    .filter((m) => m.role === "tool")
    .map((m) => m.content);

describe("built-in tools and stop reasons", () => {
  it("http_fetch reads an allowlisted host and refuses others and redirects", async () => {
    world.model.script(
      {
        toolCalls: [
          { name: "http_fetch", arguments: JSON.stringify({ url: `${siteUrl}/page` }) },
          { name: "http_fetch", arguments: JSON.stringify({ url: "http://example.com/" }) },
          { name: "http_fetch", arguments: JSON.stringify({ url: `${siteUrl}/moved` }) },
        ],
      },
      { text: "fetched" },
    );
    await dm("fetch it");
    const [ok, refused, moved] = lastToolResults();
    expect(ok).toMatch(
      /^HTTP 200\n<untrusted id="[0-9a-f]{16}" source="web page [^"]+">\nhello from the allowed site\n<\/untrusted id="[0-9a-f]{16}">$/,
    );
    expect(refused).toBe("Refused: the host example.com is not in the allowlist.");
    expect(moved).toBe("HTTP 302: redirected to http://evil.example/ (not followed).");
  });

  it("send_message delivers to a configured target through the reply queue", async () => {
    world.model.script(
      {
        toolCalls: [
          { name: "send_message", arguments: JSON.stringify({ target: "ops", text: "deploy done" }) },
        ],
      },
      { text: "told ops" },
    );
    await dm("tell ops the deploy is done");
    await waitFor(() => world.platform.messages.some((m) => m.chatId === "-100ops"), "message to ops");
    expect(world.platform.messages.find((m) => m.chatId === "-100ops")?.text).toBe("deploy done");
    expect(lastToolResults().at(-1)).toBe("Queued for delivery to ops.");
  });

  it("steering mid-batch: the tool that started finishes, the ones not started are skipped and paired", async () => {
    world.model.script(
      {
        toolCalls: [
          { name: "http_fetch", arguments: JSON.stringify({ url: `${siteUrl}/slow` }) },
          { name: "current_time", arguments: "{}" },
        ],
      },
      { text: "adjusted to your new message" },
    );
    const first = world.hub.dispatcher!.dispatchInboundMessage({
      channel: "telegram",
      messageId: String(n++),
      chat: { type: "direct", id: "7" },
      sender: { id: "7" },
      body: "fetch the slow page",
      timestamp: Date.now(),
    });
    const runId = ((await first) as { runId: string }).runId;
    await waitFor(
      () => world.model.requests.some((r) => JSON.stringify(r.messages).includes("fetch the slow page")),
      "first model call",
    );
    await new Promise((r) => setTimeout(r, 150));
    await dm("actually, never mind the time");
    await waitFor(
      async () => (await new RunRecords(redis, world.hub.prefix).get(runId))?.status === "completed",
      "first run completed",
      15_000,
    );
    const sent = world.model.requests.find((r) =>
      JSON.stringify(r.messages).includes("actually, never mind"),
    )!.messages as Array<{ role: string; content: string }>;
    const tools = sent
      .filter((m) => m.role === "tool")
      .slice(-2)
      .map((m) => m.content);
    expect(tools[0]).toMatch(/^HTTP 200\n<untrusted id="[0-9a-f]{16}" source="web page [^"]+">\nslow page\n/);
    expect(tools[1]).toBe("Skipped: the user sent a new message before this tool ran.");
    expect(sent.at(-1)).toMatchObject({ role: "user", content: "actually, never mind the time" });
  });

  it("records the stop reason: natural end, and the tool-loop guard after too many model calls", async () => {
    const natural = await dm("just answer");
    expect(await new RunRecords(redis, world.hub.prefix).get(natural)).toMatchObject({
      stopReason: "natural_end",
    });
    world.model.script(
      ...Array.from({ length: 8 }, (_, i) => ({
        toolCalls: [{ name: "current_time", arguments: JSON.stringify({ i }) }],
      })),
    );
    const looping = await dm("loop forever");
    expect(await new RunRecords(redis, world.hub.prefix).get(looping)).toMatchObject({
      stopReason: "tool_loop_guard",
    });
    const store = new FileSessionStore(world.hub.stateDir, createLogger({ level: "silent" }));
    const session = (await store.get("agent:main:telegram:direct:7"))!;
    const entries = (await store.read(session.sessionId)).filter((e) => "runId" in e && e.runId === looping);
    // Every tool call of the stopped run has exactly one result.
    const calls = entries.flatMap((e) =>
      e.type === "assistant" ? (e.toolCalls ?? []).map((c) => c.id) : [],
    );
    const results = entries.flatMap((e) => (e.type === "tool_result" ? [e.toolCallId] : []));
    expect(results.sort()).toEqual(calls.sort());
    expect(entries.at(-1)).toMatchObject({ type: "outcome", stopReason: "tool_loop_guard" });
  });
});
