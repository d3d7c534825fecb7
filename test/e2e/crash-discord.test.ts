import { type FakeDiscord, type FakeOpenAI, startFakeDiscord, startFakeOpenAI } from "@hub/fakes";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fakeModelEnv } from "../support/hub-process.js";
import { type Installation, installation } from "../support/installation.js";
import { waitFor } from "../support/redis.js";

// Crash points of the Discord channel, with real hub processes killed (SIGKILL) or frozen (SIGSTOP)
// at exact steps through HUB_FAILPOINTS, restarted, and asserted on what the fake Discord saw.
let model: FakeOpenAI;
let fake: FakeDiscord;
const installs: Installation[] = [];
beforeEach(async () => {
  model = await startFakeOpenAI();
  fake = await startFakeDiscord();
});
afterEach(async () => {
  for (const i of installs.splice(0)) await i.dispose();
  await fake.close();
  await model.close();
});

function make(name: string, extra: Record<string, unknown> = {}): Installation {
  const inst = installation(name, {
    config: {
      delivery: { leaseMs: 1500, sendTimeoutMs: 1000 },
      ...extra,
      channels: {
        discord: {
          token: fake.token,
          restApi: fake.restApi,
          leaseMs: 1000,
          textLimit: 100,
          dmPolicy: "allowlist",
          allowFrom: [fake.user.id],
          pacing: { chatIntervalMs: 0, maxSendsPerSecond: 0 },
        },
      },
    },
    env: { ...fakeModelEnv(model), HUB_LANE_LEASE_MS: "1500" },
  });
  installs.push(inst);
  return inst;
}

const dmTexts = () => fake.sent(fake.dmChannelId).map((m) => m.message.content);
const connected = () => waitFor(() => fake.gateway.liveConnections === 1, "the gateway connection", 30_000);
// textLimit 100: each paragraph of the scripted answer is a message of its own.
const SEGMENTS = Array.from({ length: 4 }, (_, i) => `Segment ${i}: ${"words ".repeat(10).trim()}.`);

describe("discord: crashes around intake", () => {
  it("killed after the gateway delivered MESSAGE_CREATE, before admission: the message is answered after the restart", async () => {
    const inst = make("dc-intake");
    // The hub has talked in this DM before: it knows where to read back from.
    const warm = await inst.start();
    await connected();
    fake.userMessage({ channelId: fake.dmChannelId, content: "hello before" });
    await waitFor(() => dmTexts().includes("echo: hello before"), "the first answer", 30_000);
    await warm.hub.kill();
    const first = await inst.start({ failpoints: "admission.before-admit=kill" });
    await connected();
    fake.userMessage({ channelId: fake.dmChannelId, content: "lost in the crash?" });
    await first.hub.exited;
    await inst.start();
    await connected();
    await waitFor(
      () => dmTexts().includes("echo: lost in the crash?"),
      "the answer to the message the crash interrupted",
      30_000,
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(dmTexts()).toEqual(["echo: hello before", "echo: lost in the crash?"]);
  }, 120_000);

  it("messages written while the hub was stopped are answered after its restart, in order, once", async () => {
    const inst = make("dc-down");
    const first = await inst.start();
    await connected();
    fake.userMessage({ channelId: fake.dmChannelId, content: "one" });
    await waitFor(() => dmTexts().includes("echo: one"), "the first answer", 30_000);
    await first.hub.stop();
    fake.userMessage({ channelId: fake.dmChannelId, content: "two" });
    fake.userMessage({ channelId: fake.dmChannelId, content: "three" });
    const second = await inst.start();
    await connected();
    fake.userMessage({ channelId: fake.dmChannelId, content: "four" });
    await waitFor(() => dmTexts().length >= 4, "the answers after the restart", 30_000);
    // A second restart reads back nothing it already answered.
    await second.hub.kill();
    await inst.start();
    await connected();
    await new Promise((r) => setTimeout(r, 2000));
    expect(dmTexts()).toEqual(["echo: one", "echo: two", "echo: three", "echo: four"]);
  }, 120_000);
  it("a restart reads back only the channels Discord's READY does not show as having nothing newer", async () => {
    const inst = make("dc-readback-skip");
    const first = await inst.start();
    await connected();
    // A mention in the guild channel (answered or refused, it is taken: its mark is kept) and a DM.
    fake.userMessage({ channelId: fake.channelId, content: "in the channel", mentionBot: true });
    fake.userMessage({ channelId: fake.dmChannelId, content: "one" });
    await waitFor(() => dmTexts().includes("echo: one"), "the first answer", 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    // A message the hub skips (another bot's) in that channel, after it: seen, so the mark moves past it.
    const otherBot = {
      id: "111111111111111111",
      username: "other-bot",
      discriminator: "0",
      global_name: null,
      avatar: null,
      bot: true,
    };
    fake.userMessage({ channelId: fake.channelId, content: "a bot talking", author: otherBot });
    await new Promise((r) => setTimeout(r, 1500));
    await first.hub.stop();
    fake.userMessage({ channelId: fake.dmChannelId, content: "two" });
    const readBacks = (channelId: string) =>
      fake.calls.filter(
        (c) => c.method === "GET /channels/:id/messages" && c.route === `/channels/${channelId}/messages`,
      ).length;
    const second = await inst.start();
    await connected();
    await waitFor(() => dmTexts().includes("echo: two"), "the DM written while down", 30_000);
    // The guild channel's last_message_id at READY is the last message seen there: no request for it. A DM
    // channel is not in READY, so it is read back.
    expect(readBacks(fake.channelId)).toBe(0);
    expect(readBacks(fake.dmChannelId)).toBeGreaterThan(0);
    // Written there while down: READY shows a newer message, and the channel is read back.
    await second.hub.stop();
    fake.userMessage({ channelId: fake.channelId, content: "in the channel, while down", mentionBot: true });
    await inst.start();
    await connected();
    await waitFor(() => readBacks(fake.channelId) > 0, "the guild channel's read-back", 30_000);
  }, 120_000);

  it("the gateway holder SIGKILLed: the standby that takes over answers what was written in between", async () => {
    const inst = make("dc-standby");
    const holder = await inst.start();
    await connected();
    await inst.start();
    fake.userMessage({ channelId: fake.dmChannelId, content: "before the kill" });
    await waitFor(() => dmTexts().includes("echo: before the kill"), "the first answer", 30_000);
    await holder.hub.kill();
    fake.userMessage({ channelId: fake.dmChannelId, content: "while nobody held the gateway" });
    await waitFor(
      () => dmTexts().includes("echo: while nobody held the gateway"),
      "the standby's answer",
      30_000,
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(dmTexts()).toEqual(["echo: before the kill", "echo: while nobody held the gateway"]);
  }, 120_000);
});

describe("discord: crashes in a multi-segment reply", () => {
  it("a delivery process killed after Discord took segment 2, before the checkpoint: the next posts nothing twice, in order", async () => {
    const inst = make("dc-seg-kill");
    model.script({ text: SEGMENTS.join("\n\n"), chunkSize: 100 });
    await inst.start({ roles: "ingress,agent" });
    await connected();
    const first = await inst.start({ roles: "delivery", failpoints: "delivery.after-send=kill@2" });
    fake.userMessage({ channelId: fake.dmChannelId, content: "four segments" });
    await first.hub.exited;
    expect(dmTexts()).toEqual(SEGMENTS.slice(0, 2));
    await inst.start({ roles: "delivery" });
    await waitFor(() => dmTexts().length >= 4, "the rest of the reply", 30_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(dmTexts()).toEqual(SEGMENTS);
  }, 90_000);

  it("a delivery process frozen inside its second send wakes after another took over: nothing doubled, in order", async () => {
    const inst = make("dc-seg-stop");
    model.script({ text: SEGMENTS.join("\n\n"), chunkSize: 100 });
    await inst.start({ roles: "ingress,agent" });
    await connected();
    const frozen = await inst.start({ roles: "delivery", failpoints: "delivery.before-send=stop@2" });
    fake.userMessage({ channelId: fake.dmChannelId, content: "four segments, frozen" });
    await frozen.hub.waitForOutput(/failpoint delivery\.before-send: stop/, 30_000);
    await inst.start({ roles: "delivery" });
    await waitFor(() => dmTexts().length >= 4, "the reply from the second delivery process", 30_000);
    frozen.hub.resume();
    await new Promise((r) => setTimeout(r, 2500));
    expect(dmTexts()).toEqual(SEGMENTS);
  }, 90_000);
});

describe("discord: a split deployment (ingress, agent, delivery processes)", () => {
  it("the agent process SIGKILLed between two pushes of a reply: another agent resumes it, nothing doubled, in order", async () => {
    const inst = make("dc-split-agent");
    // The resumed attempt's model call answers the same: the part already handed on is not sent again.
    const answer = { text: SEGMENTS.join("\n\n"), chunkSize: 100, delayMs: 50 };
    model.script(answer, answer);
    await inst.start({ roles: "ingress" });
    await connected();
    const agent = await inst.start({ roles: "agent", failpoints: "run.before-push=kill@2" });
    await inst.start({ roles: "delivery" });
    fake.userMessage({ channelId: fake.dmChannelId, content: "split deployment" });
    await agent.hub.exited;
    await inst.start({ roles: "agent" });
    await waitFor(() => dmTexts().length >= 4, "the resumed reply", 30_000);
    await new Promise((r) => setTimeout(r, 2000));
    expect(dmTexts()).toEqual(SEGMENTS);
    expect(model.requests.length).toBe(2);
  }, 120_000);
});
