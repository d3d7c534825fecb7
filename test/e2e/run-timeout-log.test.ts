import { captureLogs } from "@hub/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/src/index.js";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub, type TestHub } from "../support/hub.js";
import { waitFor } from "../support/redis.js";

// A run past its timeout is the hub working as designed: one warning with the reason in words, no stack.
let hub: TestHub;
let model: FakeOpenAI;
let client: GatewayClient;
const { logger, records: lines } = captureLogs("info");
beforeAll(async () => {
  model = await startFakeOpenAI();
  hub = await startTestHub(
    {
      agent: { model: "fake/m", runTimeoutSeconds: 1 },
      models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
    },
    "timeout-log",
    [],
    logger,
  );
  client = await GatewayClient.open(hub.port, hub.token);
});
afterAll(async () => {
  client.close();
  await hub.dispose();
  await model.close();
});

describe("a run past its timeout", () => {
  it("is logged once as a warning with its reason and without a stack", { timeout: 30_000 }, async () => {
    model.script({ hang: true });
    const runId = `timeout-${Date.now()}`;
    await client.request("chat.send", { text: "take your time", idempotencyKey: runId });
    await client.terminal(runId, 15_000);
    const ended = () => lines.filter((l) => l.msg === "run did not complete" && l.runId === runId);
    await waitFor(() => ended().length > 0, "the run's end line", 10_000);
    const [line] = ended();
    expect(line).toMatchObject({ level: 40, status: "timed_out" });
    // Why it stopped, not the model call's abort error that the timeout caused.
    expect(line?.reason).toBe("run timed out");
    expect(JSON.stringify(line)).not.toContain("    at ");
  });
});
