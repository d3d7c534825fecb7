import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub, type TestHub } from "../support/hub.js";

let hub: TestHub | undefined;
let client: GatewayClient | undefined;
afterEach(async () => {
  client?.ws.close();
  await hub?.dispose();
});

describe("a command's answer nobody delivers", () => {
  it("is announced anyway once the run timeout has passed", async () => {
    // No delivery role in this process and none elsewhere: the answer is queued but never sent.
    hub = await startTestHub({ roles: ["ingress", "agent"], agent: { runTimeoutSeconds: 1 } }, "unsettled");
    client = await GatewayClient.open(hub.port, hub.token);
    const res = await client.request("chat.send", { text: "/status", idempotencyKey: "unsettled-status" });
    const runId = (res as { payload?: { runId?: string } }).payload?.runId ?? "";
    expect(runId).not.toBe("");
    const end = await client.terminal(runId, 8_000);
    expect(end.state).toBe("final");
    expect(end.text).toContain("Session");
  });
});
