import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { type AdapterFields, captureLogs, createLogger, type InboundResult } from "@hub/core";
import { type FakeTelegram, privateText, startFakeTelegram } from "@hub/fakes";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/redis.js";
import { TelegramAdapter } from "../src/index.js";
import { memoryState } from "./harness.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A polling adapter against the fake Bot API, its inbound answered by `answer` (the hub's part). */
// A webhook-mode adapter (secret "s3cret-s3cret-s3cret") behind a local HTTP server at /tg, closed after the test.
async function webhookAdapter(fake: FakeTelegram) {
  const server = createServer((req, res) => void route?.handle(req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  const adapter = new TelegramAdapter({
    botToken: fake.token,
    apiRoot: fake.apiRoot,
    state: memoryState(),
    logger: createLogger({ level: "silent" }),
    mode: "webhook",
    webhookUrl: `http://127.0.0.1:${port}/tg`,
    webhookSecret: "s3cret-s3cret-s3cret",
  });
  const route = adapter.httpRoutes()[0];
  cleanups.push(async () => {
    await adapter.stop();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await fake.close();
  });
  return { adapter, port };
}

async function polling(answer: (fields: AdapterFields) => InboundResult) {
  const fake = await startFakeTelegram();
  const { logger, lines } = captureLogs("debug");
  const state = memoryState();
  const adapter = new TelegramAdapter({
    botToken: fake.token,
    apiRoot: fake.apiRoot,
    state,
    logger,
    pollTimeoutSeconds: 1,
  });
  const seen: string[] = [];
  cleanups.push(async () => {
    await adapter.stop();
    await fake.close();
  });
  await adapter.start(async (fields) => {
    seen.push(fields.body);
    return answer(fields);
  });
  return { fake, adapter, seen, lines, state };
}

const text = (body: string) => privateText({ chatId: 5, fromId: 5, text: body });
const poison = [
  { message: "a string, not a message" },
  { message: { message_id: 1, date: 1, text: "no chat" } },
  { message: { message_id: 1, date: 1, chat: null, text: "null chat" } },
  { message: { message_id: "x", chat: { id: "y" } } },
];

/** The offsets getUpdates was called with, in order. */
const offsets = (fake: FakeTelegram) => fake.callsOf("getUpdates").map((c) => c.params.offset);

describe("telegram polling edge", () => {
  it("moves the offset past poison updates first, mid-batch and at the end of a batch", async () => {
    const { fake, seen, lines, state } = await polling(() => ({ kind: "accepted" }));
    fake.pushUpdate(poison[0]!);
    fake.pushUpdate(text("one"));
    fake.pushUpdate(poison[1]!);
    fake.pushUpdate(poison[2]!);
    fake.pushUpdate(text("two"));
    const last = fake.pushUpdate(poison[3]!);
    await waitFor(() => seen.length === 2, "both valid messages");
    await waitFor(
      () => state.values.get("telegram:default:offset") === String(last + 1),
      "offset past the batch",
    );
    expect(seen).toEqual(["one", "two"]);
    await waitFor(() => fake.pendingUpdates.length === 0, "the fake confirmed every update");
    const dropped = lines.filter((l) => l.includes("dropping a malformed Telegram update"));
    expect(dropped).toHaveLength(4);
    expect(dropped.every((l) => /"updateId":\d+/.test(l))).toBe(true);
    // New messages keep flowing after the poison.
    fake.pushUpdate(text("three"));
    await waitFor(() => seen.includes("three"), "a message after the poison");
  });

  it("holds the offset only at a transient failure, retries just that update with backoff", async () => {
    let failures = 2;
    const { fake, seen } = await polling((fields) => {
      if (fields.body === "flaky" && failures > 0) {
        failures--;
        return { kind: "retry", reason: "redis unreachable" };
      }
      return { kind: "accepted" };
    });
    const before = fake.pushUpdate(text("before"));
    const flaky = fake.pushUpdate(text("flaky"));
    fake.pushUpdate(text("after"));
    await waitFor(
      () => seen.filter((b) => b === "flaky").length === 3,
      "flaky retried until accepted",
      10_000,
    );
    await waitFor(() => fake.pendingUpdates.length === 0, "everything confirmed", 10_000);
    // Accepted updates are handled once; only the failed one is handled again.
    expect(seen.filter((b) => b === "before")).toHaveLength(1);
    expect(seen.filter((b) => b === "after")).toHaveLength(1);
    expect(offsets(fake)).toContain(flaky);
    expect(offsets(fake)).not.toContain(before);
  });

  it("answers an unreachable Bot API with a transient error and no silent hang; a refused token is failed", async () => {
    const unreachable = new TelegramAdapter({
      botToken: "1:A",
      apiRoot: "http://127.0.0.1:1",
      state: memoryState(),
      logger: createLogger({ level: "silent" }),
    });
    const started = Date.now();
    await expect(unreachable.start(async () => ({ kind: "accepted" }))).rejects.toThrow(
      /^Telegram could not be reached \(network error: .*ECONNREFUSED/,
    );
    expect(Date.now() - started).toBeLessThan(5000);
    expect(unreachable.status()).toMatchObject({ state: "reconnecting" });
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    const refused = new TelegramAdapter({
      botToken: "999:WRONG",
      apiRoot: fake.apiRoot,
      state: memoryState(),
      logger: createLogger({ level: "silent" }),
    });
    await expect(refused.start(async () => ({ kind: "accepted" }))).rejects.toThrow(
      "Telegram did not accept the bot token (401 Unauthorized); check channels.telegram.botToken or TELEGRAM_BOT_TOKEN (from @BotFather).",
    );
    expect(refused.status()).toMatchObject({ state: "failed", reason: expect.stringContaining("botToken") });
  });
});

describe("telegram webhook edge", () => {
  it("answers 200 to updates that can never be accepted, 503 only to our transient failures", async () => {
    const fake = await startFakeTelegram();
    const { adapter } = await webhookAdapter(fake);
    let transient = true;
    const seen: string[] = [];
    await adapter.start(async (fields) => {
      seen.push(fields.body);
      if (fields.body === "flaky" && transient) {
        transient = false;
        return { kind: "retry", reason: "redis unreachable" };
      }
      return { kind: "accepted" };
    });
    const statuses: number[] = [];
    for (const bad of poison) statuses.push((await fake.postWebhook(bad)).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect((await fake.postWebhook(text("flaky"))).status).toBe(503);
    expect((await fake.postWebhook(text("fine"))).status).toBe(200);
    expect(seen).toEqual(["flaky", "fine"]);
  });

  it("refuses a call without the secret before reading its body (nothing of a stranger's upload is held)", async () => {
    const fake = await startFakeTelegram();
    const { port } = await webhookAdapter(fake);
    // Headers announce a 1 MB body that never comes: the answer must not wait for it.
    const status = await new Promise<number | string>((resolve) => {
      const req = request({
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/tg",
        headers: { "content-length": "1000000", "x-telegram-bot-api-secret-token": "wrong-secret-wrong" },
      });
      req.on("response", (res) => resolve(res.statusCode ?? 0));
      req.on("error", () => resolve("error"));
      req.flushHeaders();
      setTimeout(() => resolve("no answer before the body"), 2000);
    });
    expect(status).toBe(401);
  });
});
