import { captureLogs } from "@hub/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub, type TestHub } from "../support/hub.js";
import { waitFor } from "../support/redis.js";

const { logger, records: lines } = captureLogs("info");
let hub: TestHub;
let client: GatewayClient;
beforeAll(async () => {
  // The offline model streams a word every 40 ms: a long enough answer to stop.
  hub = await startTestHub(
    { agent: { model: "offline/echo", offlineTokenDelayMs: 40 } },
    "stop-logs",
    [],
    logger,
  );
  client = await GatewayClient.open(hub.port, hub.token);
});
afterAll(async () => {
  client.close();
  await hub.dispose();
});

let n = 0;
const send = async (sessionKey: string, text: string) => {
  const runId = `stop-${Date.now()}-${n++}`;
  const res = await client.request("chat.send", { sessionKey, text, idempotencyKey: runId });
  expect(res.ok).toBe(true);
  return runId;
};

describe("a user's /stop", () => {
  it("is logged as stopped (info, no stack), is no model failure, and no other chat's /status mentions it", async () => {
    const s = "agent:main:webchat:direct:stopped";
    const long = await send(s, "tell me a long story");
    // The answer takes about 2 s (40 ms a word): well into it, it is stopped.
    await new Promise((r) => setTimeout(r, 500));
    expect(await client.terminal(await send(s, "/stop"))).toMatchObject({ text: "Stopped." });
    expect((await client.terminal(long)).state).toBe("aborted");
    await waitFor(() => lines.some((l) => l.msg === "run stopped"), "the stop logged");
    const ofRun = lines.filter((l) => l.runId === long);
    expect(ofRun.find((l) => l.msg === "run stopped")).toMatchObject({ level: 30, status: "aborted" });
    expect(ofRun.filter((l) => l.err !== undefined)).toEqual([]);
    expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
    const status = await client.terminal(await send("agent:main:webchat:direct:other", "/status"));
    expect(status.text).toContain("Model: offline/echo");
    expect(status.text).not.toContain("failover");
  });
});
