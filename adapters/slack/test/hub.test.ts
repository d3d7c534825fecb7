import { type FakeOpenAI, type FakeSlack, type SlackCall, startFakeOpenAI } from "@hub/fakes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestHub, type TestHub } from "../../../test/support/hub.js";
import { waitFor } from "../../../test/support/redis.js";
import type { SlackAdapter } from "../src/index.js";
import { appMentionEvent, messageEvent, SLACK_IDS, slackHarness } from "./harness.js";

// The whole hub with the Slack plugin's adapter: events POSTed to the hub's own server, signed like Slack's.
describe("slack through the hub", () => {
  const OPEN_CHANNEL = "C0OPEN0001";
  const BROADCAST_CHANNEL = "C0BCAST001";
  let hub: TestHub;
  let model: FakeOpenAI;
  let fake: FakeSlack;
  let adapter: SlackAdapter;
  let harness: ReturnType<typeof slackHarness>;
  const modelSaw = (text: string) =>
    model.requests.filter((r) => JSON.stringify(r.messages.at(-1)).includes(text)).length;
  // A mention of the bot in the group channel (in the thread on `threadTs` when given), delivered as Slack does.
  const mention = async (text: string, threadTs?: string) => {
    const msg = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, `<@${fake.botUserId}> ${text}`, threadTs);
    await fake.deliver(fake.envelope(appMentionEvent(msg)));
    return msg;
  };
  // What the bot posted in the group's thread on `ts`.
  const postedInThread = (ts: string) =>
    fake
      .posted(SLACK_IDS.group)
      .filter((m) => m.thread_ts === ts)
      .map((m) => String(m.text));
  // `/stop` in the thread on `ts` is answered there, and the run it stopped posts nothing more.
  const stopsInThread = async (ts: string) => {
    await mention("/stop", ts);
    const inThread = () => postedInThread(ts);
    await waitFor(() => inThread().includes("Stopped."), "the stop's answer in the thread", 10_000);
    expect(inThread()).not.toContain("Nothing is running.");
    const posted = inThread().length;
    await new Promise((r) => setTimeout(r, 1500));
    expect(inThread()).toHaveLength(posted);
  };

  beforeAll(async () => {
    model = await startFakeOpenAI();
    harness = slackHarness({ mode: "http", adapter: { uncertainSettleMs: 2500, workingIdleMs: 6000 } });
    await harness.start();
    fake = harness.fake();
    adapter = harness.adapter();
    hub = await startTestHub(
      {
        ...harness.hubConfig?.(),
        agent: { model: "fake/m" },
        models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
        delivery: { sendTimeoutMs: 1000 },
        channels: {
          slack: {
            dmPolicy: "allowlist",
            allowFrom: [SLACK_IDS.user],
            ackReactionScope: "all",
            channels: {
              [SLACK_IDS.group]: { requireMention: true },
              [OPEN_CHANNEL]: { requireMention: false },
              [BROADCAST_CHANNEL]: { requireMention: false },
            },
          },
        },
      },
      "slack-hub",
      [adapter],
    );
  }, 30_000);
  afterAll(async () => {
    await hub?.dispose();
    await harness?.stop();
    await model?.close();
  });

  it("answers a channel mention in a thread on it, showing a reaction while it works", async () => {
    model.script({ text: "On it." });
    const msg = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, `<@${fake.botUserId}> deploy status?`);
    await Promise.all([
      fake.deliver(fake.envelope(appMentionEvent(msg))),
      fake.deliver(fake.envelope(messageEvent(msg))),
    ]);
    await waitFor(() => fake.posted(SLACK_IDS.group).length === 1, "the answer");
    const [answer] = fake.posted(SLACK_IDS.group);
    expect([answer?.text, answer?.thread_ts]).toEqual(["On it.", msg.ts]);
    expect(fake.callsOf("reactions.add").map((c) => c.params)).toContainEqual(
      expect.objectContaining({ channel: SLACK_IDS.group, timestamp: msg.ts, name: "eyes" }),
    );
    // app_mention + message for one mention: one run.
    await new Promise((r) => setTimeout(r, 500));
    expect(fake.posted(SLACK_IDS.group)).toHaveLength(1);
    expect(modelSaw("deploy status?")).toBe(1);
    await waitFor(() => fake.reactionsOn(SLACK_IDS.group, msg.ts).length === 0, "the reaction to go", 12_000);
  }, 20_000);

  it("removes the working reaction also when the run fails", async () => {
    model.script({
      fail: { status: 400, body: { error: { message: "bad request", type: "invalid_request_error" } } },
    });
    const msg = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, `<@${fake.botUserId}> this will fail`);
    await fake.deliver(fake.envelope(appMentionEvent(msg)));
    // The run may fail within one poll, so look for the reaction in the call history, not in the current state.
    await waitFor(
      () =>
        fake.callsOf("reactions.add").some((c) => c.params.timestamp === msg.ts && c.params.name === "eyes"),
      "the working reaction",
    );
    await waitFor(
      () => fake.posted(SLACK_IDS.group).some((m) => m.thread_ts === msg.ts),
      "the failure notice in the thread",
    );
    await waitFor(() => fake.reactionsOn(SLACK_IDS.group, msg.ts).length === 0, "the reaction to go", 12_000);
  }, 20_000);

  it("answers a DM in the DM", async () => {
    model.script({ text: "Hi *there*." });
    const before = fake.posted(SLACK_IDS.directChat).length;
    await harness.direct("hello");
    await waitFor(() => fake.posted(SLACK_IDS.directChat).length === before + 1, "the DM answer");
    const answer = fake.posted(SLACK_IDS.directChat).at(-1);
    expect([answer?.text, answer?.thread_ts]).toEqual(["Hi _there_.", undefined]);
  });

  it("shows the working status in a DM thread only for an answer slower than a second", async () => {
    const calls = () => fake.callsOf("assistant.threads.setStatus");
    const answered = (text: string) => fake.posted(SLACK_IDS.directChat).some((m) => m.text === text);
    // Each answer in a thread of its own (a thread's status, once shown, is only kept alive after).
    const askInThread = (text: string) => {
      const root = fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, `thread for ${text}`);
      const asked = fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, text, root.ts);
      return fake.deliver(fake.envelope(messageEvent(asked)));
    };
    const before = calls().length;
    model.script({ text: "Quick." });
    const askedAt = Date.now();
    await askInThread("quick one");
    await waitFor(() => answered("Quick."), "the quick answer");
    // Past the typing delay: a status that was only late would show up now. On a quiet machine there
    // is none; on a busy one the run may outlast the delay, and its status comes after it.
    await new Promise((r) => setTimeout(r, 1500));
    for (const call of calls().slice(before)) expect(call.at - askedAt).toBeGreaterThanOrEqual(990);
    const quick = calls().length;
    model.script({ text: "A slower answer.", chunkSize: 2, delayMs: 250 });
    await askInThread("slow one");
    await waitFor(() => answered("A slower answer."), "the slow answer");
    expect(
      calls()
        .slice(quick)
        .map((c) => c.params.status),
    ).toContain("is thinking…");
  }, 20_000);

  it("answers a thread reply also sent to the channel (thread_broadcast) in its thread, once with its app_mention", async () => {
    const broadcast = (channel: string, text: string) => {
      const root = fake.userMessage(channel, SLACK_IDS.user, "a thread root");
      const reply = fake.userMessage(channel, SLACK_IDS.user, text, root.ts);
      // As Slack sends it (events/message/thread_broadcast): the thread's root rides along.
      const rootCopy = { type: "message", user: root.user, text: root.text, ts: root.ts, thread_ts: root.ts };
      return { root, reply, event: messageEvent(reply, { subtype: "thread_broadcast", root: rootCopy }) };
    };
    const answers = (channel: string, text: string) =>
      fake
        .posted(channel)
        .filter((m) => m.text === text)
        .map((m) => m.thread_ts);
    model.script({ text: "Broadcast heard." });
    const open = broadcast(BROADCAST_CHANNEL, "a broadcast reply, no mention");
    await fake.deliver(fake.envelope(open.event));
    await waitFor(
      () => answers(BROADCAST_CHANNEL, "Broadcast heard.").length === 1,
      "the answer in the thread",
    );
    expect(answers(BROADCAST_CHANNEL, "Broadcast heard.")).toEqual([open.root.ts]);
    model.script({ text: "Mentioned broadcast." });
    const mentioned = broadcast(SLACK_IDS.group, `<@${fake.botUserId}> a broadcast reply with a mention`);
    await Promise.all([
      fake.deliver(fake.envelope(mentioned.event)),
      fake.deliver(fake.envelope(appMentionEvent(mentioned.reply))),
    ]);
    await waitFor(
      () => answers(SLACK_IDS.group, "Mentioned broadcast.").length === 1,
      "the mentioned answer",
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(answers(SLACK_IDS.group, "Mentioned broadcast.")).toEqual([mentioned.root.ts]);
    expect(modelSaw("a broadcast reply with a mention")).toBe(1);
  });

  it("/stop in the thread a channel answer appears in stops that answer", async () => {
    // A long stream (about 10 s): the answer to a channel mention, in a thread on it.
    model.script({ text: `Long answer. ${"more words ".repeat(500)}`, chunkSize: 20, delayMs: 40 });
    const root = await mention("a long one please");
    await waitFor(
      () => model.requests.some((r) => JSON.stringify(r.messages).includes("a long one please")),
      "the run",
    );
    await stopsInThread(root.ts);
  }, 30_000);

  it("a follow-up in the thread of a channel answer still being written is answered after it, with its question and answer in context", async () => {
    // The first answer streams for about 3 s; the follow-up comes while it does.
    model.script(
      { text: `First answer. ${"words ".repeat(60)}END-1`, chunkSize: 10, delayMs: 80 },
      { text: "Second answer." },
    );
    const root = await mention("tell me about q7");
    await waitFor(() => modelSaw("tell me about q7") === 1, "the first run");
    await mention("q7 in more detail", root.ts);
    const inThread = () => postedInThread(root.ts);
    await waitFor(() => inThread().length === 2, "both answers in the thread", 20_000);
    expect(inThread()[0]).toMatch(/^First answer\..*END-1$/s);
    expect(inThread()[1]).toBe("Second answer.");
    // The follow-up's turn had the first question and its answer.
    const second = model.requests.find((r) =>
      JSON.stringify(r.messages.at(-1)).includes("q7 in more detail"),
    );
    expect(JSON.stringify(second?.messages)).toContain("tell me about q7");
    expect(JSON.stringify(second?.messages)).toContain("END-1");
  }, 40_000);

  it("/stop in a thread stops a follow-up of that thread running in the channel's session", async () => {
    model.script({ text: "Short first answer." });
    const root = await mention("start q9");
    const inThread = () => postedInThread(root.ts);
    await waitFor(() => inThread().length === 1, "the first answer", 10_000);
    // A long follow-up answer (about 10 s), stopped from the thread.
    model.script({ text: `Long follow-up. ${"more words ".repeat(500)}`, chunkSize: 20, delayMs: 40 });
    await mention("q9 at length", root.ts);
    await waitFor(() => modelSaw("q9 at length") === 1, "the follow-up's run");
    await stopsInThread(root.ts);
  }, 40_000);

  it("answers a DM whose text is only in rich_text blocks", async () => {
    model.script({ text: "Read your blocks." });
    const before = fake.posted(SLACK_IDS.directChat).length;
    const m = fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "");
    const blocks = [
      {
        type: "rich_text",
        block_id: "Xq1",
        elements: [
          {
            type: "rich_text_section",
            elements: [
              { type: "text", text: "only in " },
              { type: "text", text: "blocks", style: { bold: true } },
            ],
          },
        ],
      },
    ];
    await fake.deliver(fake.envelope(messageEvent(m, { blocks })));
    await waitFor(() => fake.posted(SLACK_IDS.directChat).length === before + 1, "the answer");
    expect(fake.posted(SLACK_IDS.directChat).at(-1)?.text).toBe("Read your blocks.");
    expect(modelSaw("only in blocks")).toBe(1);
  });

  it("removes a DM's working reaction only after the answer is posted, also when the post first hit a 429", async () => {
    for (const limited of [false, true]) {
      const answer = limited ? "Answered after a wait." : "Answered at once.";
      model.script({ text: answer });
      if (limited) fake.failNext("chat.postMessage", { status: 429, retryAfter: 1 });
      const from = fake.calls.length;
      const ref = (await harness.direct(`react until answered (${limited})`)) as { event: { ts: string } };
      const removal = (c: SlackCall) =>
        c.method === "reactions.remove" && c.params.timestamp === ref.event.ts;
      await waitFor(() => fake.calls.slice(from).some(removal), "the reaction removed", 15_000);
      const calls = fake.calls.slice(from);
      const posted = calls.findIndex(
        (c) => c.method === "chat.postMessage" && c.error === undefined && c.params.text === answer,
      );
      expect(
        posted,
        `calls: ${calls.map((c) => `${c.method}${c.error ? `(${c.error})` : ""}`)}`,
      ).toBeGreaterThan(-1);
      // The answer's post was answered before the removal was asked for.
      expect(calls.findIndex(removal)).toBeGreaterThan(posted);
      if (limited)
        expect(calls.some((c) => c.method === "chat.postMessage" && c.error === "ratelimited")).toBe(true);
    }
  }, 30_000);

  it("refuses a bad signature and a stale timestamp with 401 and runs nothing", async () => {
    const forged = fake.envelope(
      messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "forged one")),
    );
    const stale = fake.envelope(
      messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "stale one")),
    );
    const a = await fake.deliver(forged, { signature: "v0=deadbeef" });
    const b = await fake.deliver(stale, { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 });
    expect([a.status, b.status]).toEqual([401, 401]);
    await new Promise((r) => setTimeout(r, 500));
    expect(modelSaw("forged one") + modelSaw("stale one")).toBe(0);
  });

  it("answers url_verification through the hub's server", async () => {
    const res = await fake.deliver({ token: "t", challenge: "c-123", type: "url_verification" });
    expect([res.status, JSON.parse(res.body)]).toEqual([200, { challenge: "c-123" }]);
  });

  it("runs an event delivered three times with Slack's retry headers once", async () => {
    model.script({ text: "Once." });
    const before = fake.posted(SLACK_IDS.directChat).length;
    const envelope = fake.envelope(
      messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "three times")),
    );
    const statuses = [
      (await fake.deliver(envelope)).status,
      (await fake.deliver(envelope, { retryNum: 1, retryReason: "http_timeout" })).status,
      (await fake.deliver(envelope, { retryNum: 2, retryReason: "http_error" })).status,
    ];
    expect(statuses).toEqual([200, 200, 200]);
    await waitFor(() => fake.posted(SLACK_IDS.directChat).length === before + 1, "the answer");
    await new Promise((r) => setTimeout(r, 800));
    expect(
      fake
        .posted(SLACK_IDS.directChat)
        .slice(before)
        .map((m) => m.text),
    ).toEqual(["Once."]);
    expect(modelSaw("three times")).toBe(1);
  });

  it("answers without a mention in a channel configured with requireMention: false", async () => {
    model.script({ text: "Open answer." });
    const msg = fake.userMessage(OPEN_CHANNEL, SLACK_IDS.user, "anyone around?");
    await fake.deliver(fake.envelope(messageEvent(msg)));
    await waitFor(() => fake.posted(OPEN_CHANNEL).length === 1, "the answer in the open channel");
    expect(fake.posted(OPEN_CHANNEL)[0]?.thread_ts).toBe(msg.ts);
  });

  it("posts one message when the first chat.postMessage lands after the hub gave up on it", async () => {
    model.script({ text: "Exactly one." });
    const before = fake.posted(SLACK_IDS.directChat).length;
    const callsBefore = fake.callsOf("chat.postMessage").length;
    // Slower than delivery.sendTimeoutMs (1 s): the hub aborts, the fake still completes the post.
    fake.slowNext("chat.postMessage", 1800);
    await harness.direct("slow platform");
    await waitFor(() => fake.posted(SLACK_IDS.directChat).length === before + 1, "the slow post");
    await waitFor(
      () => fake.callsOf("conversations.history").length > 0,
      "the lookup after settling",
      10_000,
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(
      fake
        .posted(SLACK_IDS.directChat)
        .slice(before)
        .map((m) => m.text),
    ).toEqual(["Exactly one."]);
    expect(fake.callsOf("chat.postMessage").length - callsBefore).toBe(1);
    expect(adapter.status().state).toBe("connected");
  }, 20_000);
});
