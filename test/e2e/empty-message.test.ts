import { redisStateStore } from "@hub/app";
import { captureLogs } from "@hub/core";
import { telegramPlugin } from "@hub/telegram";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeTelegram, privateText, startFakeTelegram } from "../fakes/src/index.js";
import { startTestHub, type TestHub } from "../support/hub.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../support/redis.js";

// A message that shows nothing is the sender's doing, not the operator's: it is ignored at debug level,
// whether the adapter sees that it is empty (whitespace) or only admission does (invisible characters).
const USER = 7411;
const STRANGER = 7412;
const { logger, records: lines } = captureLogs("debug");
const statePrefix = testPrefix("empty-message-state");
const redis = new Redis(REDIS_URL);
let telegram: FakeTelegram;
let hub: TestHub;
beforeAll(async () => {
  telegram = await startFakeTelegram();
  const config = { botToken: telegram.token, apiRoot: telegram.apiRoot };
  const adapter = await telegramPlugin.create(telegramPlugin.configSchema.parse(config), {
    accountId: "default",
    logger,
    state: redisStateStore(redis, statePrefix),
    stateDir: "/tmp",
  });
  hub = await startTestHub(
    { channels: { telegram: { dmPolicy: "allowlist", allowFrom: [String(USER)] } } },
    "empty-message",
    [adapter],
    logger,
  );
});
afterAll(async () => {
  await hub?.dispose();
  await telegram?.close();
  await dropPrefix(statePrefix);
  redis.disconnect();
});

describe("an empty inbound message", () => {
  it("is ignored at debug level like other messages with nothing to answer; the next one is answered", async () => {
    const empty: Array<[number, string]> = [
      [USER, "   "],
      [USER, "\u200b\u2060"],
      [STRANGER, "\u3164"],
    ];
    for (const [from, text] of empty) telegram.pushUpdate(privateText({ chatId: from, fromId: from, text }));
    telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text: "something to answer" }));
    await waitFor(() => telegram.sent(USER).length > 0, "the answer to the message after them", 20_000);
    expect(telegram.sent(USER).map((m) => String(m.text))).toEqual([
      expect.stringContaining("something to answer"),
    ]);
    expect(telegram.sent(STRANGER)).toEqual([]);
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
    const said = lines.filter((l) => /empty|no text/i.test(`${l.msg} ${l.reason ?? ""}`));
    expect(said.map((l) => l.level)).toEqual([20, 20, 20]);
  });
});
