import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI } from "@hub/fakes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../../../test/support/cli.js";
import {
  fakeModelEnv,
  freePort,
  type HubProcess,
  startHubProcess,
} from "../../../../test/support/hub-process.js";
import { dropPrefix, testPrefix } from "../../../../test/support/redis.js";

// `hub chat`: the README's ready-to-run client of the web chat's protocol, against a real hub process.
let stateDir: string;
let prefix: string;
let port: number;
let hub: HubProcess;
let env: Record<string, string>;
beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "hub-cli-chat-"));
  prefix = testPrefix("cli-chat");
  port = await freePort();
  env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix, HUB_GATEWAY_PORT: String(port) };
  hub = await startHubProcess(env, port);
}, 60_000);
afterAll(async () => {
  await hub?.stop();
  rmSync(stateDir, { recursive: true, force: true });
  await dropPrefix(prefix);
});

describe("hub chat", { timeout: 60_000 }, () => {
  it("sends a message through the gateway and prints the answer as it is delivered; exit 0", async () => {
    const run = await runCli(["chat", "what", "is", "2+2?"], env, 30_000);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("You said: what is 2+2?");
    expect(run.stderr).toContain(
      `(from gateway 127.0.0.1:${port} with the token stored in ${join(stateDir, "gateway-token")})`,
    );
    // The web chat sees the same session: the exchange is in its history.
    const again = await runCli(
      ["chat", "--session", "agent:main:webchat:direct:cli-test", "hello"],
      env,
      30_000,
    );
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("You said: hello");
  });

  it("a message the hub does not accept is one sentence and exit 1", async () => {
    const run = await runCli(["chat", "\u200b"], env, 30_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("hub: Not accepted: the message is empty.");
    expect(run.stdout).toBe("");
  });

  it("prints a model's terminal escapes as text, so an answer cannot drive the terminal", async () => {
    const model = await startFakeOpenAI();
    const dir = mkdtempSync(join(tmpdir(), "hub-cli-chat-esc-"));
    const modelPort = await freePort();
    const modelEnv = {
      HUB_STATE_DIR: dir,
      HUB_REDIS_PREFIX: `${prefix}-esc`,
      HUB_GATEWAY_PORT: String(modelPort),
      ...fakeModelEnv(model),
    };
    const modelHub = await startHubProcess(modelEnv, modelPort);
    try {
      model.script({ text: "Hello \u001b]0;PWNED\u0007\u001b[2J\u001b[31mred\u001b[0m done" });
      const run = await runCli(["chat", "hi"], modelEnv, 30_000);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).not.toContain("\u001b");
      expect(run.stdout).toContain("Hello \\u001b]0;PWNED\\u0007\\u001b[2J\\u001b[31mred\\u001b[0m done");
    } finally {
      await modelHub.stop();
      await model.close();
      rmSync(dir, { recursive: true, force: true });
      await dropPrefix(`${prefix}-esc`);
    }
  });

  it("with a configured token the running hub refuses, hub chat says that token was used, and what to use", async () => {
    const run = await runCli(
      ["chat", "hi"],
      { ...env, HUB_GATEWAY_TOKEN: "not-the-hub-token-0123456789" },
      30_000,
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("with the configured token (gateway.token or HUB_GATEWAY_TOKEN)");
    expect(run.stderr).toMatch(/gateway\.token or HUB_GATEWAY_TOKEN when set, else the one the hub printed/);
  });

  it("hub doctor with a token the running hub refuses still reports every other check", async () => {
    const run = await runCli(
      ["doctor", "--json"],
      { ...env, HUB_GATEWAY_TOKEN: "not-the-hub-token-0123456789" },
      30_000,
    );
    expect(run.code).toBe(1);
    const checks = JSON.parse(run.stdout) as {
      checks: Array<{ name: string; status: string; fix?: string }>;
    };
    const byName = new Map(checks.checks.map((c) => [c.name, c]));
    expect(byName.get("config")?.status).toBe("ok");
    expect(byName.get("redis")?.status).toBe("ok");
    expect(byName.get("gateway")).toMatchObject({
      status: "fail",
      fix: expect.stringContaining("HUB_GATEWAY_TOKEN"),
    });
  });

  it("finds the port a hub with gateway.port 0 took (its health record), where the config says 0", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hub-cli-chat-port0-"));
    const anyPort = { ...env, HUB_STATE_DIR: dir, HUB_GATEWAY_PORT: "0" };
    const picked = await startHubProcess(anyPort, 0, { gateway: false });
    try {
      const run = await runCli(["chat", "hello"], anyPort, 30_000);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain("You said: hello");
      expect(run.stderr).toMatch(/\(from gateway 127\.0\.0\.1:([1-9]\d*) with the token stored in /);
    } finally {
      await picked.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("without a running hub: one sentence that says to start it", async () => {
    const run = await runCli(
      ["chat", "hello"],
      { ...env, HUB_GATEWAY_PORT: String(await freePort()) },
      30_000,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/No hub answers at 127\.0\.0\.1:\d+ .*start it with "npm start"/);
  });
});
