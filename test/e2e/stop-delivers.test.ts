import { type FakeDiscord, type FakeOpenAI, startFakeDiscord, startFakeOpenAI } from "@hub/fakes";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fakeModelEnv } from "../support/hub-process.js";
import { type Installation, installation } from "../support/installation.js";
import { waitFor } from "../support/redis.js";

// A hub told to stop (SIGTERM) while a reply is still being sent finishes sending it before it exits: the
// channel's connection is closed after delivery, not with intake. Discord's client forgets its REST token
// when it is destroyed, so a Discord reply caught by the stop used to fail every retry until the restart.
let model: FakeOpenAI;
let fake: FakeDiscord;
let inst: Installation | undefined;
beforeEach(async () => {
  model = await startFakeOpenAI();
  fake = await startFakeDiscord();
});
afterEach(async () => {
  await inst?.dispose();
  await fake.close();
  await model.close();
});

const SEGMENTS = Array.from({ length: 4 }, (_, i) => `Segment ${i}: ${"words ".repeat(10).trim()}.`);

describe("a stop while a reply is being sent", () => {
  it("sends the rest of the reply (paced a second apart) before the process exits 0", async () => {
    inst = installation("stop-delivers", {
      config: {
        channels: {
          discord: {
            token: fake.token,
            restApi: fake.restApi,
            textLimit: 100,
            dmPolicy: "allowlist",
            allowFrom: [fake.user.id],
            // Each segment waits a second after the one before: the stop comes with three still to send.
            pacing: { chatIntervalMs: 1000, maxSendsPerSecond: 0 },
          },
        },
      },
      env: fakeModelEnv(model),
    });
    const dmTexts = () => fake.sent(fake.dmChannelId).map((m) => m.message.content);
    model.script({ text: SEGMENTS.join("\n\n"), chunkSize: 100 });
    const { hub } = await inst.start();
    await waitFor(() => fake.gateway.liveConnections === 1, "the gateway connection", 30_000);
    fake.userMessage({ channelId: fake.dmChannelId, content: "four segments, then a stop" });
    await waitFor(() => dmTexts().length >= 1, "the first segment", 30_000);
    await hub.stop();
    expect(hub.child.exitCode).toBe(0);
    expect(dmTexts()).toEqual(SEGMENTS);
  }, 120_000);
});
