import { createLogger } from "@hub/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../adapters/telegram/src/index.js";
import { memoryState } from "../../adapters/telegram/test/harness.js";
import {
  type FakeOpenAI,
  type FakeTelegram,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { startTestHub, type TestHub } from "../support/hub.js";
import { waitFor } from "../support/redis.js";

// A run holds one of `agent.maxConcurrentRuns` slots until its reply is handed to delivery, not until
// the reply is out: a chat whose delivery is slow (paced, throttled) must not hold up other chats' runs.

let fake: FakeTelegram;
let model: FakeOpenAI;
let hub: TestHub;
beforeAll(async () => {
  fake = await startFakeTelegram();
  model = await startFakeOpenAI();
  const adapter = new TelegramAdapter({
    botToken: fake.token,
    apiRoot: fake.apiRoot,
    state: memoryState(),
    logger: createLogger({ level: "silent" }),
    pollTimeoutSeconds: 1,
    // Each chat's second message waits 3 s after its first.
    pacing: { chatIntervalMs: 3000 },
  });
  hub = await startTestHub(
    {
      agent: { model: "fake/m", maxConcurrentRuns: 1 },
      models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
      channels: { telegram: { dmPolicy: "allowlist", allowFrom: ["4242", "4343"] } },
    },
    "slot",
    [adapter],
  );
});
afterAll(async () => {
  await hub.dispose();
  await fake.close();
  await model.close();
});

describe("a run's concurrency slot", () => {
  it("is free once the reply is handed to delivery: one slot, and another chat is answered while the first chat's reply still waits out its pacing", async () => {
    const part = (n: number) => `Part ${n} ${"word ".repeat(600)}`.trim();
    model.script({ text: `${part(1)}\n\n${part(2)}` }, { text: "Short answer." });
    fake.pushUpdate(privateText({ chatId: 4242, fromId: 4242, text: "a long answer, please" }));
    await waitFor(() => fake.sent("4242").length === 1, "the long answer's first message", 10_000);
    fake.pushUpdate(privateText({ chatId: 4343, fromId: 4343, text: "and one for me" }));
    await waitFor(() => fake.sent("4343").length === 1, "the other chat's answer", 10_000);
    // The first chat's second message is still waiting out its 3 s: the one slot was free all the same.
    expect(fake.sent("4242")).toHaveLength(1);
    await waitFor(() => fake.sent("4242").length === 2, "the long answer's second message", 10_000);
    const sends = fake.callsOf("sendMessage");
    const other = sends.find((c) => c.params.chat_id === 4343);
    const second = sends.filter((c) => c.params.chat_id === 4242)[1];
    expect(other!.at).toBeLessThan(second!.at);
  }, 30_000);
});
