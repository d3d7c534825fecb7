import { runIdForMessage } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeOpenAI,
  type FakeTelegram,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { fakeModelEnv } from "../support/hub-process.js";
import { type Installation, installation } from "../support/installation.js";
import { REDIS_URL, waitFor } from "../support/redis.js";

// Delivery crash points (issue 9, items 7 and 9), with real processes frozen at the exact step.
let model: FakeOpenAI;
const installs: Installation[] = [];
// A fresh model per test: a script one test left unconsumed never becomes another test's answer.
beforeEach(async () => {
  model = await startFakeOpenAI();
});
afterEach(async () => {
  for (const i of installs.splice(0)) await i.dispose();
  await model.close();
});

const modelEnv = () => fakeModelEnv(model);

describe("a delivery worker frozen past its lease", () => {
  it("sends nothing when it wakes: the platform sees every segment once, in order", async () => {
    const inst = installation("frozen-delivery", {
      config: { delivery: { leaseMs: 1500, sendTimeoutMs: 1000 } },
      env: modelEnv(),
    });
    installs.push(inst);
    model.script({ text: Array.from({ length: 5 }, (_, i) => `Segment ${i}.`).join("\n\n"), chunkSize: 100 });
    const front = await inst.start({ roles: "ingress,agent" });
    const client = front.client!;
    // The only delivery process freezes just before its second platform write.
    const frozen = await inst.start({ roles: "delivery", failpoints: "delivery.before-send=stop@2" });
    await client.request("chat.history", {});
    await client.request("chat.send", { text: "five segments please", idempotencyKey: "frozen-del-0001" });
    await frozen.hub.waitForOutput(/failpoint delivery\.before-send: stop/);
    // A second delivery process takes the target over once the frozen one's lease runs out.
    await inst.start({ roles: "delivery" });
    expect(await client.terminal("frozen-del-0001", 30_000)).toMatchObject({ state: "final" });
    frozen.hub.resume();
    await new Promise((r) => setTimeout(r, 2500));
    const seen = client
      .chatEvents("frozen-del-0001")
      .filter((e) => e.state === "delta")
      .map((e) => e.text);
    expect(seen).toEqual(["Segment 0.", "Segment 1.", "Segment 2.", "Segment 3.", "Segment 4."]);
    expect(frozen.hub.output.join("")).toMatch(/the lease may have expired before a write/);
  }, 60_000);
});

describe("admission never waits for delivery", () => {
  let telegram: FakeTelegram;
  let redis: Redis;
  beforeAll(async () => {
    telegram = await startFakeTelegram();
    redis = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    await telegram.close();
    redis.disconnect();
  });

  it("a /status behind a chat's paced backlog does not hold up another chat's message", async () => {
    const [ann, bob] = [7101, 7202];
    const inst = installation("status-backlog", {
      config: {
        channels: {
          telegram: {
            botToken: telegram.token,
            apiRoot: telegram.apiRoot,
            dmPolicy: "allowlist",
            allowFrom: [String(ann), String(bob)],
          },
        },
      },
      env: modelEnv(),
    });
    installs.push(inst);
    // Ann's answer: 8 segments, paced at one per second per chat by Telegram's limits.
    const long = Array.from({ length: 8 }, (_, i) => `Part ${i}: ${"word ".repeat(700)}`).join("\n\n");
    model.script({ text: long, chunkSize: 2000 });
    await inst.start();
    telegram.pushUpdate(
      privateText({ chatId: ann, fromId: ann, text: "tell me a long story", messageId: 501 }),
    );
    // Ann's run is over (every part queued) and its first part is out: the rest is a backlog no run holds.
    const story = runIdForMessage(`telegram:default:${ann}:501`);
    await waitFor(
      async () => (await redis.hget(`${inst.prefix}:run:${story}`, "status")) === "completed",
      "Ann's run to finish",
      20_000,
    );
    await waitFor(() => telegram.sent(ann).length >= 1, "the first part of Ann's answer", 20_000);
    telegram.pushUpdate(privateText({ chatId: ann, fromId: ann, text: "/status" }));
    telegram.pushUpdate(privateText({ chatId: bob, fromId: bob, text: "hello from bob" }));
    await waitFor(() => telegram.sent(bob).length === 1, "Bob's answer", 20_000);
    // Bob was answered while Ann's backlog was still going out; her /status comes after all of it, in order.
    expect(telegram.sent(ann).some((m) => String(m.text).includes("Part 7"))).toBe(false);
    await waitFor(
      () => telegram.sent(ann).some((m) => String(m.text).includes("Queue mode")),
      "Ann's /status answer",
      30_000,
    );
    const annTexts = telegram.sent(ann).map((m) => String(m.text));
    const lastPart = annTexts.findLastIndex((t) => t.includes("Part 7"));
    expect(lastPart, `Ann's messages: ${annTexts.map((t) => t.slice(0, 40)).join(" | ")}`).toBeGreaterThan(0);
    const status = annTexts.findIndex((t) => t.includes("Queue mode"));
    expect(status).toBeGreaterThan(lastPart);
    expect(status).toBe(annTexts.length - 1);
  }, 60_000);
});
