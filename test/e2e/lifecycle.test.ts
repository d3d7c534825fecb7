import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type FakeOpenAI, startFakeOpenAI, startSilentServer } from "@hub/fakes";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../support/redis.js";

const TOKEN = "lifecycle-token-0123456789";
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A fake model and a state dir with a hub.json5 using it; returns the model and the environment to start a hub with. */
async function installation(name: string, drainSeconds: number, channels: Record<string, unknown> = {}) {
  const model = await startFakeOpenAI();
  cleanups.push(() => model.close());
  const stateDir = mkdtempSync(join(tmpdir(), "hub-life-"));
  const prefix = testPrefix(name);
  const config = join(stateDir, "hub.json5");
  writeFileSync(
    config,
    JSON.stringify({
      agent: { model: "fake/m" },
      models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
      lifecycle: { drainSeconds },
      channels,
    }),
  );
  cleanups.push(async () => {
    rmSync(stateDir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });
  const port = await freePort();
  const env = {
    HUB_STATE_DIR: stateDir,
    HUB_CONFIG: config,
    HUB_REDIS_PREFIX: prefix,
    HUB_GATEWAY_TOKEN: TOKEN,
    HUB_GATEWAY_PORT: String(port),
  };
  return { model, env, port, prefix, config };
}

async function started(env: Record<string, string>, port: number): Promise<HubProcess> {
  const hub = await startHubProcess(env, port);
  cleanups.push(() => hub.kill());
  return hub;
}

/** Sends one web chat message and waits until the model has it (the run is in flight). */
async function runInFlight(port: number, model: FakeOpenAI, runId: string): Promise<GatewayClient> {
  const client = await GatewayClient.open(port, TOKEN);
  cleanups.push(() => client.close());
  const before = model.requests.length;
  const res = await client.request("chat.send", { text: `work for ${runId}`, idempotencyKey: runId });
  expect(res.ok).toBe(true);
  await waitFor(() => model.requests.length > before, "the model call");
  return client;
}

describe("SIGTERM drain", () => {
  it("stops intake (readyz 503, chat.send refused as retryable), lets the run finish and deliver, exits 0", async () => {
    const { model, env, port } = await installation("drain", 30);
    const hub = await started(env, port);
    // A token set in the environment: the start line names it, not a token file that was never written.
    await hub.waitForOutput(
      /Web chat: http:\/\/127\.0\.0\.1:\d+\/ {2}\(token the gateway\.token or HUB_GATEWAY_TOKEN you set\)/,
    );
    expect(existsSync(join(env.HUB_STATE_DIR, "gateway-token"))).toBe(false);
    model.script({ text: "a slow answer that streams for a while", chunkSize: 4, delayMs: 150 });
    const client = await runInFlight(port, model, "drain-run-1");
    hub.child.kill("SIGTERM");
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 503, "readyz 503");
    const body = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as { reasons: string[] };
    expect(body.reasons).toContain("the hub is shutting down");
    const late = await client.request("chat.send", { text: "too late", idempotencyKey: "drain-run-2" });
    expect(late).toMatchObject({ ok: false, error: { code: "unavailable" } });
    await hub.exited;
    expect(hub.child.exitCode).toBe(0);
    // The run in flight finished and its answer reached the client before the exit.
    expect(client.chatEvents("drain-run-1").at(-1)).toMatchObject({
      state: "final",
      text: "a slow answer that streams for a while",
    });
    expect(model.requests.some((r) => JSON.stringify(r.messages).includes("too late"))).toBe(false);
    const out = hub.output.join("");
    expect(out).toContain("draining: no new work is taken");
    expect(out).toContain('"interrupted":0');
  });

  it("past the budget: exits 0 and leaves the run's record running for restart recovery, naming it", async () => {
    const { model, env, port, prefix } = await installation("budget", 1);
    const hub = await started(env, port);
    model.script({ hang: true });
    await runInFlight(port, model, "budget-run-1");
    const t0 = Date.now();
    hub.child.kill("SIGTERM");
    await hub.exited;
    expect(hub.child.exitCode).toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    // The line names the run, its session and its channel, like every line of a run.
    const line = hub.output
      .join("")
      .split("\n")
      .find((l) => l.includes("restart recovery resumes it"));
    expect(JSON.parse(line ?? "{}")).toMatchObject({
      runId: "budget-run-1",
      sessionKey: expect.stringContaining("webchat"),
      channel: "webchat",
    });
    const redis = new Redis(REDIS_URL);
    cleanups.push(() => redis.disconnect());
    expect(await redis.hget(`${prefix}:run:budget-run-1`, "status")).toBe("running");
    expect(hub.output.join("")).toContain('"interrupted":1');
  });

  it("a run past the budget that ends while the hub stops is not counted as interrupted", async () => {
    const { model, env, port } = await installation("budget-ends", 1);
    const hub = await started(env, port);
    // About 2 s of streaming: past the 1 s budget, within the stop's grace.
    model.script({ text: "an answer that ends soon after the budget", chunkSize: 4, delayMs: 200 });
    await runInFlight(port, model, "budget-ends-1");
    hub.child.kill("SIGTERM");
    await hub.exited;
    const out = hub.output.join("");
    expect(out).toContain("run still in flight at the end of the drain budget");
    // It ended while the hub stopped (the client's connection closes at the drain, before its final event).
    expect(out).toMatch(/"runId":"budget-ends-1"[^\n]*"status":"completed"[^\n]*"msg":"run finished"/);
    expect(out).toContain('"interrupted":0');
  });

  it("an idle hub whose platforms never answer stops at once, not when their connection attempts time out", async () => {
    const silent = await startSilentServer();
    cleanups.push(() => silent.close());
    const at = `http://127.0.0.1:${silent.port}`;
    const { env, port } = await installation("silent", 30, {
      telegram: { botToken: "123456:SILENT-TOKEN", apiRoot: at },
      discord: { token: "silent.discord.token", restApi: `${at}/api` },
      slack: { botToken: "xoxb-silent", signingSecret: "silent-signing-secret", apiUrl: `${at}/api/` },
    });
    const hub = await started(env, port);
    // Each channel's first request is open and unanswered: every start is still connecting.
    await waitFor(() => silent.connections() >= 3, "a connection attempt from every channel");
    const t0 = Date.now();
    hub.child.kill("SIGTERM");
    await hub.exited;
    // Before, the stop waited for the starts: grammY's 40 s getMe timeout, capped by the drain budget.
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(hub.child.exitCode).toBe(0);
    const afterStop = hub.output.join("").split("draining")[1] ?? "";
    expect(afterStop).toContain('"msg":"stopped');
    expect(afterStop).not.toMatch(/could not connect/);
  });

  it("a second SIGTERM exits at once", async () => {
    const { model, env, port } = await installation("twice", 60);
    const hub = await started(env, port);
    model.script({ hang: true });
    await runInFlight(port, model, "twice-run-1");
    hub.child.kill("SIGTERM");
    await hub.waitForOutput(/draining/);
    await new Promise((r) => setTimeout(r, 600));
    const t0 = Date.now();
    hub.child.kill("SIGTERM");
    await hub.exited;
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(hub.child.exitCode).toBe(1);
    expect(hub.output.join("")).toContain("second stop signal");
  });
});

/** The hub started through a wrapper command (`npm start`, `node scripts/bootstrap.mjs start`), once its gateway answers. */
async function wrapped(command: string, args: string[], env: Record<string, string>, port: number) {
  const output: string[] = [];
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL, HUB_LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", (d: Buffer) => output.push(d.toString()));
  child.stderr.on("data", (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  cleanups.push(() => void child.kill("SIGKILL"));
  await waitFor(
    async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true,
    "the hub behind the wrapper",
    45_000,
  );
  // The hub's own process (its log lines name it): killed at the end whatever happened to the wrapper.
  const hubPid = Number(/"pid":(\d+),[^\n]*"msg":"hub started"/.exec(output.join(""))?.[1]);
  expect(hubPid).toBeGreaterThan(0);
  cleanups.push(() => {
    if (alive(hubPid)) process.kill(hubPid, "SIGKILL");
  });
  return { child, output, exited, hubPid };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("SIGHUP and the npm start wrapper", () => {
  it("npm start's wrapper passes SIGHUP (reload) and SIGTERM on, and exits with the hub's code", async () => {
    const { model, env, port, config } = await installation("wrapper", 5);
    const { child, output, exited } = await wrapped(
      process.execPath,
      ["scripts/bootstrap.mjs", "start"],
      env,
      port,
    );
    writeFileSync(
      config,
      JSON.stringify({
        agent: { model: "fake/m" },
        models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
        lifecycle: { drainSeconds: 5 },
        channels: { webchat: { dmPolicy: "open", allowFrom: ["*"] } },
      }),
    );
    child.kill("SIGHUP");
    await waitFor(() => output.join("").includes("reloaded channel allowlists and policies"), "the reload");
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(output.join("")).toContain('"msg":"stopped"');
    // The hub itself is gone, not orphaned behind the wrapper.
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it("npm start itself: SIGTERM to npm reaches the hub, npm exits 0 and no hub is left running", async () => {
    const { env, port } = await installation("npm-start", 5);
    const { child, output, exited, hubPid } = await wrapped("npm", ["start"], env, port);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    await waitFor(() => !alive(hubPid), "the hub process gone", 15_000);
    expect(output.join("")).toContain('"msg":"stopped"');
  });
});
