import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../../../test/support/gateway-client.js";
import { freePort, startHubProcess } from "../../../test/support/hub-process.js";
import { dropPrefix, testPrefix, waitFor } from "../../../test/support/redis.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("npm start with channels.whatsapp and no linked device", () => {
  it("runs the hub, reports the channel logged out with how to link it, and opens no connection", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "hub-wa-"));
    const prefix = testPrefix("wa-start");
    const config = join(stateDir, "hub.json5");
    writeFileSync(
      config,
      `{ channels: { whatsapp: { dmPolicy: "allowlist", allowFrom: ["4915112345678@s.whatsapp.net"] } } }`,
    );
    const port = await freePort();
    const token = "wa-start-token-0123456789abcdef";
    const hub = await startHubProcess(
      { HUB_STATE_DIR: stateDir, HUB_CONFIG: config, HUB_REDIS_PREFIX: prefix, HUB_GATEWAY_TOKEN: token },
      port,
    );
    cleanups.push(async () => {
      if (hub.child.exitCode === null) await hub.stop();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
    });
    const output = () => hub.output.join("");
    await waitFor(() => output().includes("whatsapp logged out"), "the logged-out line", 10_000);
    expect(output()).toMatch(/no linked device; link one with \\"hub channels login whatsapp\\"/);
    const client = await GatewayClient.open(port, token);
    cleanups.push(() => client.close());
    const res = await client.request("channels.status");
    const channels = (res as { payload: { channels: Array<{ channel: string; status: { state: string } }> } })
      .payload.channels;
    expect(channels.map((c) => [c.channel, c.status.state])).toEqual([
      ["whatsapp", "logged_out"],
      ["webchat", "connected"],
    ]);
    expect(output()).not.toMatch(/ENOTFOUND|WebSocket Error/);
  }, 30_000);
});
