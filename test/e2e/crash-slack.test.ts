import { type FakeOpenAI, type FakeSlack, startFakeOpenAI, startFakeSlack } from "@hub/fakes";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appMentionEvent, messageEvent, SLACK_IDS } from "../../adapters/slack/test/harness.js";
import { fakeModelEnv } from "../support/hub-process.js";
import { type Installation, installation } from "../support/installation.js";
import { waitFor } from "../support/redis.js";
import { startOwnRedis } from "../support/redis-server.js";

// Crash points of the Slack channel (Events API over HTTP and Socket Mode), with real hub processes
// killed (SIGKILL) or frozen (SIGSTOP) at exact steps through HUB_FAILPOINTS, restarted, and asserted
// on what the fake Slack saw.
let model: FakeOpenAI;
let fake: FakeSlack;
const installs: Installation[] = [];
beforeEach(async () => {
  model = await startFakeOpenAI();
  fake = await startFakeSlack();
});
afterEach(async () => {
  for (const i of installs.splice(0)) await i.dispose();
  await fake.close();
  await model.close();
});

function make(name: string, slack: Record<string, unknown> = {}): Installation {
  const inst = installation(name, {
    config: {
      delivery: { leaseMs: 1500, sendTimeoutMs: 1000 },
      channels: {
        slack: {
          apiUrl: fake.apiUrl,
          botToken: fake.botToken,
          signingSecret: fake.signingSecret,
          appToken: fake.appToken,
          dmPolicy: "allowlist",
          allowFrom: [SLACK_IDS.user],
          channels: { [SLACK_IDS.group]: { requireMention: true } },
          pacing: { chatIntervalMs: 0, maxSendsPerSecond: 0 },
          ...slack,
        },
      },
    },
    env: { ...fakeModelEnv(model), HUB_LANE_LEASE_MS: "1500" },
  });
  installs.push(inst);
  return inst;
}

/** Starts a process and points the fake's Events URL at it; waits until Slack's channel is ready. */
async function startOn(inst: Installation, options: Parameters<Installation["start"]>[0] = {}) {
  const started = await inst.start(options);
  if (options.wait === false || (options.roles && !options.roles.includes("ingress"))) return started;
  fake.eventsUrl = `http://127.0.0.1:${started.port}/slack/events`;
  const ready = async () =>
    (await fetch(`http://127.0.0.1:${started.port}/readyz`).catch(() => undefined))?.ok === true;
  await waitFor(ready, "the Slack channel to connect", 20_000);
  return started;
}

const texts = (channel: string) => fake.posted(channel).map((m) => m.text);
const modelSaw = (text: string) =>
  model.requests.filter((r) => JSON.stringify(r.messages.at(-1)).includes(text)).length;
const settle = (ms = 1500) => new Promise((r) => setTimeout(r, ms));

describe("slack events: killed between receiving the POST and acknowledging it", () => {
  it("before admission: Slack's retry (X-Slack-Retry-Num) after the restart is answered once", async () => {
    const inst = make("sl-before");
    const first = await startOn(inst, { failpoints: "admission.before-admit=kill" });
    const envelope = fake.envelope(
      messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "first try")),
    );
    await expect(fake.deliver(envelope)).rejects.toThrow();
    await first.hub.exited;
    await startOn(inst);
    expect((await fake.deliver(envelope, { retryNum: 1, retryReason: "http_error" })).status).toBe(200);
    await waitFor(() => texts(SLACK_IDS.directChat).includes("echo: first try"), "the answer", 20_000);
    await settle();
    expect(texts(SLACK_IDS.directChat)).toEqual(["echo: first try"]);
    expect(modelSaw("first try")).toBe(1);
  }, 90_000);

  it("after admission: the retry is a duplicate, answered once", async () => {
    const inst = make("sl-after");
    const first = await startOn(inst, { failpoints: "admission.after-admit=kill" });
    const envelope = fake.envelope(
      messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "admitted then killed")),
    );
    await expect(fake.deliver(envelope)).rejects.toThrow();
    await first.hub.exited;
    await startOn(inst);
    expect((await fake.deliver(envelope, { retryNum: 1, retryReason: "http_error" })).status).toBe(200);
    await waitFor(
      () => texts(SLACK_IDS.directChat).includes("echo: admitted then killed"),
      "the answer",
      20_000,
    );
    await settle();
    expect(texts(SLACK_IDS.directChat)).toEqual(["echo: admitted then killed"]);
    expect(modelSaw("admitted then killed")).toBe(1);
  }, 90_000);

  it("a mention's app_mention admitted, then killed: its message event and the retry make no second run", async () => {
    const inst = make("sl-pair");
    const first = await startOn(inst, { failpoints: "admission.after-admit=kill" });
    const msg = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, `<@${fake.botUserId}> pair please`);
    const mention = fake.envelope(appMentionEvent(msg));
    await expect(fake.deliver(mention)).rejects.toThrow();
    await first.hub.exited;
    await startOn(inst);
    await Promise.all([
      fake.deliver(fake.envelope(messageEvent(msg))),
      fake.deliver(mention, { retryNum: 1, retryReason: "http_error" }),
    ]);
    await waitFor(() => fake.posted(SLACK_IDS.group).length >= 1, "the answer", 20_000);
    await settle();
    expect(fake.posted(SLACK_IDS.group).map((m) => [m.text, m.thread_ts])).toEqual([
      ["echo: pair please", msg.ts],
    ]);
  }, 90_000);
});

describe("slack socket mode: killed before the envelope's ack", () => {
  it("Slack's redelivery to the restarted hub is answered once", async () => {
    const inst = make("sl-socket", { mode: "socket" });
    const first = await startOn(inst, { failpoints: "admission.after-admit=kill" });
    const envelope = fake.envelope(
      messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "over the socket")),
    );
    expect(await fake.deliverSocket(envelope, { timeoutMs: 3000 })).toBe(false);
    await first.hub.exited;
    await startOn(inst);
    await waitFor(() => fake.socketConnected, "the socket to reconnect", 20_000);
    expect(await fake.deliverSocket(envelope, { retryAttempt: 1, timeoutMs: 10_000 })).toBe(true);
    await waitFor(() => texts(SLACK_IDS.directChat).includes("echo: over the socket"), "the answer", 20_000);
    await settle();
    expect(texts(SLACK_IDS.directChat)).toEqual(["echo: over the socket"]);
    expect(modelSaw("over the socket")).toBe(1);
  }, 90_000);
});

// Long paragraphs of distinct words: the reply is several messages, and a doubled or swapped one shows.
const PARTS = Array.from({ length: 3 }, (_, i) =>
  Array.from({ length: 400 }, (_, j) => `w${i}x${j}`).join(" "),
);
const words = (list: string[]) => list.join(" ").split(/\s+/).filter(Boolean);

describe("slack: a delivery process killed inside chat.postMessage of a multi-segment reply", () => {
  it("the next delivery process finds the uncertain post instead of posting it again; order kept", async () => {
    const inst = make("sl-mid-post");
    model.script({ text: PARTS.join("\n\n"), chunkSize: 1000 });
    await startOn(inst, { roles: "ingress,agent" });
    const first = await startOn(inst, { roles: "delivery", failpoints: "delivery.before-send=stop@2" });
    await fake.deliver(
      fake.envelope(messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "three parts"))),
    );
    await first.hub.waitForOutput(/failpoint delivery\.before-send: stop/, 30_000);
    // The second post reaches Slack, which completes it after the process is dead.
    fake.slowNext("chat.postMessage", 1500);
    const posts = fake.callsOf("chat.postMessage").length;
    first.hub.resume();
    await waitFor(() => fake.callsOf("chat.postMessage").length > posts, "the second post", 10_000);
    await first.hub.kill();
    await waitFor(() => fake.posted(SLACK_IDS.directChat).length === 2, "Slack to complete it", 5000);
    await startOn(inst, { roles: "delivery" });
    const all = words(PARTS);
    await waitFor(
      () => words(texts(SLACK_IDS.directChat)).length >= all.length,
      "the rest of the reply",
      60_000,
    );
    await settle();
    expect(words(texts(SLACK_IDS.directChat))).toEqual(all);
  }, 120_000);
});

describe("slack: a split deployment (two ingress processes, agent, delivery)", () => {
  it("an ingress frozen inside admission while Slack's retry is admitted by the other: one run when it wakes", async () => {
    const inst = make("sl-split-frozen");
    const frozen = await startOn(inst, { roles: "ingress", failpoints: "admission.before-admit=stop" });
    const frozenUrl = fake.eventsUrl;
    const other = await startOn(inst, { roles: "ingress" });
    await inst.start({ roles: "agent,delivery" });
    const envelope = fake.envelope(
      messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "frozen ingress")),
    );
    fake.eventsUrl = frozenUrl;
    const stuck = fake.deliver(envelope).catch(() => undefined);
    await frozen.hub.waitForOutput(/failpoint admission\.before-admit: stop/, 20_000);
    // Slack gave up after 3 s and retries; the load balancer sends the retry to the other ingress.
    fake.eventsUrl = `http://127.0.0.1:${other.port}/slack/events`;
    expect((await fake.deliver(envelope, { retryNum: 1, retryReason: "http_timeout" })).status).toBe(200);
    await waitFor(() => texts(SLACK_IDS.directChat).includes("echo: frozen ingress"), "the answer", 20_000);
    frozen.hub.resume();
    await stuck;
    await settle(2500);
    expect(texts(SLACK_IDS.directChat)).toEqual(["echo: frozen ingress"]);
    expect(modelSaw("frozen ingress")).toBe(1);
  }, 120_000);
});

describe("slack events: acknowledged early (admission slower than 2.5 s), then killed", () => {
  // An event whose admission takes longer than the 2.5 s ack deadline (Redis slow: a failover, a fork, a
  // paused primary) is acknowledged with 200 and admitted in the background; Slack never resends what it
  // got a 200 for, so the delivery is journaled in the state dir before the 200 leaves, and the next start
  // admits what a killed process left there.
  it("the message is still answered after the restart", async () => {
    const own = await startOwnRedis();
    const admin = new Redis(own.url);
    try {
      const inst = make("sl-early-ack");
      const env = { REDIS_URL: own.url };
      const first = await startOn(inst, { env });
      // Writes wait (reads and pings do not): admission's atomic step cannot finish for 6 s.
      await admin.call("CLIENT", "PAUSE", "6000", "WRITE");
      const envelope = fake.envelope(
        messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "acked early")),
      );
      const started = Date.now();
      expect((await fake.deliver(envelope)).status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
      await first.hub.kill();
      await admin.call("CLIENT", "UNPAUSE");
      await startOn(inst, { env });
      await waitFor(() => texts(SLACK_IDS.directChat).includes("echo: acked early"), "the answer", 30_000);
    } finally {
      admin.disconnect();
      await own.stop();
    }
  }, 120_000);
});
