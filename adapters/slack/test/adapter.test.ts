import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AdapterFields,
  ChannelRefusedError,
  captureLogs,
  createLogger,
  type HubLogger,
  type InboundResult,
  PermanentSendError,
  PID_SPACE,
  RateLimitedError,
  type ReplyTarget,
} from "@hub/core";
import { type FakeSlack, startFakeSlack } from "@hub/fakes";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/redis.js";
import { SlackAdapter, type SlackAdapterOptions } from "../src/index.js";
import { SEGMENT_EVENT_TYPE } from "../src/poster.js";
import { appMentionEvent, freePort, memoryState, messageEvent, SLACK_IDS } from "./harness.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Handler = (fields: AdapterFields) => Promise<InboundResult | undefined>;

/** An adapter against the fake Slack, its routes on a local server; inbound goes to `handler`. */
async function setup(options: Partial<SlackAdapterOptions> & { handler?: Handler } = {}) {
  const fake = await startFakeSlack();
  const received: AdapterFields[] = [];
  const { handler, ...adapterOptions } = options;
  const adapter = new SlackAdapter({
    botToken: fake.botToken,
    signingSecret: fake.signingSecret,
    appToken: fake.appToken,
    apiUrl: fake.apiUrl,
    state: memoryState(),
    logger: createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" }),
    ...adapterOptions,
  });
  await adapter.start(async (fields) => {
    received.push(fields);
    return (await handler?.(fields)) ?? { kind: "accepted" };
  });
  const routes = adapter.httpRoutes();
  const server: Server = createServer((req, res) => {
    const route = routes.find((r) => r.method === req.method && r.path === req.url);
    if (!route) return void res.writeHead(404).end();
    void route.handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  fake.eventsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
  cleanups.push(async () => {
    await adapter.stop();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await fake.close();
  });
  return { fake, adapter, received };
}

/** A Socket Mode adapter on `fake` (not started). */
function socketAdapter(fake: FakeSlack, logger: HubLogger): SlackAdapter {
  return new SlackAdapter({
    botToken: fake.botToken,
    appToken: fake.appToken,
    mode: "socket",
    apiUrl: fake.apiUrl,
    state: memoryState(),
    logger,
  });
}

/** A logger that keeps its lines (parsed), for tests of what a drop says. */
function capturedLogger() {
  const { logger, records: lines } = captureLogs("debug");
  return { lines, logger };
}

// A pid that ran and is gone (a child that exited): a journal under it is a dead process's.
const deadPid = () => spawnSync(process.execPath, ["-e", "0"]).pid as number;

const dm = (fake: FakeSlack, text: string) =>
  fake.envelope(messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, text)));

describe("slack events over HTTP", () => {
  it("answers url_verification with the challenge", async () => {
    const { fake } = await setup();
    const res = await fake.deliver({
      token: "t",
      challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
      type: "url_verification",
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({
      challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    });
  });

  it("acknowledges a url_verification without a challenge with an empty answer, not a made-up challenge", async () => {
    const { fake, received } = await setup();
    const res = await fake.deliver({ token: "t", type: "url_verification" });
    expect(res.status).toBe(200);
    expect(res.body).toBe("");
    expect(received).toEqual([]);
  });

  it("refuses a bad signature, a stale timestamp and missing headers with 401, running nothing", async () => {
    const { fake, received } = await setup();
    const bad = await fake.deliver(dm(fake, "forged"), { signature: `v0=${"0".repeat(64)}` });
    const stale = await fake.deliver(dm(fake, "replayed"), {
      timestamp: Math.floor(Date.now() / 1000) - 301,
    });
    const unsigned = await fetch(fake.eventsUrl ?? "", {
      method: "POST",
      body: JSON.stringify(dm(fake, "x")),
    });
    expect([bad.status, stale.status, unsigned.status]).toEqual([401, 401, 401]);
    const fresh = await fake.deliver(dm(fake, "signed"), { timestamp: Math.floor(Date.now() / 1000) - 280 });
    expect(fresh.status).toBe(200);
    expect(received.map((f) => f.body)).toEqual(["signed"]);
  });

  it("turns a signed DM into adapter fields with the sender's name", async () => {
    const { fake, received } = await setup();
    const envelope = dm(fake, "hello &lt;there&gt; <https://example.com|site>");
    expect((await fake.deliver(envelope)).status).toBe(200);
    const event = envelope.event as { ts: string };
    expect(received).toEqual([
      expect.objectContaining({
        channel: "slack",
        messageId: event.ts,
        chat: { type: "direct", id: SLACK_IDS.directChat },
        sender: {
          id: SLACK_IDS.user,
          name: `User ${SLACK_IDS.user}`,
          username: "user-u0user0001",
          isBot: false,
        },
        body: "hello <there> site (https://example.com)",
        wasMentioned: true,
      }),
    ]);
  });

  it("admits a chat's messages in arrival order when an earlier one's sender lookup is slow", async () => {
    const { fake, received } = await setup();
    // The first message's users.info takes 800 ms (a busy workspace); the second arrives 100 ms later.
    fake.slowNext("users.info", 800);
    const first = fake.deliver(dm(fake, "first: what is 2+2?"));
    await new Promise((r) => setTimeout(r, 100));
    const second = fake.deliver(dm(fake, "second: and times 3?"));
    expect([(await first).status, (await second).status]).toEqual([200, 200]);
    await waitFor(() => received.length === 2, "both messages admitted");
    expect(received.map((f) => f.body)).toEqual(["first: what is 2+2?", "second: and times 3?"]);
  });

  it("acknowledges a signed body that can never be read (not JSON, empty, a form, no envelope) with one log line each", async () => {
    const { lines, logger } = capturedLogger();
    const { fake, received } = await setup({ logger });
    const statuses = [
      (await fake.deliverRaw("{not json")).status,
      (await fake.deliverRaw("")).status,
      (await fake.deliverRaw("command=%2Fhub&text=hi", { contentType: "application/x-www-form-urlencoded" }))
        .status,
      (await fake.deliverRaw("null")).status,
      (await fake.deliverRaw('{"no":"type"}')).status,
    ];
    // Slack retries anything but a 2xx, and a redelivery would carry the same bytes.
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    expect(received).toEqual([]);
    const drops = lines.filter((l) => String(l.msg).includes("acknowledged"));
    expect(drops.map((l) => [l.level, l.msg])).toEqual([
      ...Array(2).fill([40, "webhook body cannot be read; acknowledged and dropped"]),
      [
        40,
        "slack form request (a slash command or interactivity URL set to the Events URL) is not handled; acknowledged",
      ],
      ...Array(2).fill([40, "slack request is not an Events API envelope; acknowledged and dropped"]),
    ]);
    expect(drops[2]?.command).toBe("/hub");
    expect(drops[4]?.reason).toBe("type: Invalid input: expected string, received undefined");
    // A slash command pointed at the Events URL: its user reads why nothing happens (only they see it).
    const slash = await fake.deliverRaw("command=%2Fask&text=hi&user_id=U1&response_url=x", {
      contentType: "application/x-www-form-urlencoded",
    });
    expect(slash.status).toBe(200);
    expect(JSON.parse(slash.body)).toEqual({
      response_type: "ephemeral",
      text: "This app does not take slash commands like /ask: mention it in a channel or send it a direct message.",
    });
    // A button's interaction (`payload` holds its JSON) is acknowledged with nothing to show.
    const click = await fake.deliverRaw(`payload=${encodeURIComponent('{"type":"block_actions"}')}`, {
      contentType: "application/x-www-form-urlencoded",
    });
    expect([click.status, click.body]).toEqual([200, ""]);
    // Slack's certificate check of a slash command URL comes unsigned: 200, nothing done, nothing logged.
    const check = await fetch(fake.eventsUrl ?? "", {
      method: "POST",
      headers: { "content-type": "Application/X-WWW-Form-Urlencoded; charset=utf-8" },
      body: "ssl_check=1&token=legacy",
    });
    expect(check.status).toBe(200);
    expect(lines.filter((l) => String(l.msg).includes("verification"))).toEqual([]);
    expect(received).toEqual([]);
    // Unsigned, a form that also carries a command (or says ssl_check otherwise) is no certificate check.
    for (const forged of [
      "ssl_check=1&ssl_check=0&command=%2Fhub&text=hi",
      "ssl_check=1&command=%2Fhub",
      `ssl_check=1&payload=${encodeURIComponent('{"type":"block_actions"}')}`,
    ]) {
      const res = await fetch(fake.eventsUrl ?? "", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: forged,
      });
      expect({ forged, status: res.status }).toEqual({ forged, status: 401 });
    }
    // A bad signature on the same garbage is still refused.
    expect((await fake.deliverRaw("{not json", { signature: `v0=${"0".repeat(64)}` })).status).toBe(401);
  });

  it("says in the drop log line which event it was and what was wrong with it", async () => {
    const { lines, logger } = capturedLogger();
    const { fake, received } = await setup({ logger });
    const base = messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "x"));
    const { channel: _, ...noChannel } = base;
    const broken = [
      fake.envelope({ ...base, text: null }),
      fake.envelope({ ...base, text: 42 }),
      fake.envelope(noChannel),
      fake.envelope({ ...base, ts: 1700000000.0001 }),
      { ...fake.envelope(base), event: null },
    ];
    for (const envelope of broken) expect((await fake.deliver(envelope)).status).toBe(200);
    expect(received).toEqual([]);
    const drops = lines.filter((l) => l.msg === "slack event does not match Slack's event shape; dropped");
    expect(drops.map((l) => [l.eventId, l.ts, l.chatId, l.reason])).toEqual([
      [
        broken[0]?.event_id,
        base.ts,
        SLACK_IDS.directChat,
        "event.text: Invalid input: expected string, received null",
      ],
      [
        broken[1]?.event_id,
        base.ts,
        SLACK_IDS.directChat,
        "event.text: Invalid input: expected string, received number",
      ],
      [
        broken[2]?.event_id,
        base.ts,
        undefined,
        "event.channel: Invalid input: expected string, received undefined",
      ],
      [
        broken[3]?.event_id,
        1700000000.0001,
        SLACK_IDS.directChat,
        "event.ts: Invalid input: expected string, received number",
      ],
      [broken[4]?.event_id, undefined, undefined, "event: Invalid input: expected object, received null"],
    ]);
  });

  it("answers 503 when admission fails (Slack retries), 200 when the message is rejected for good", async () => {
    let answer: () => InboundResult = () => {
      throw new Error("redis is down");
    };
    const { fake } = await setup({ handler: async () => answer() });
    expect((await fake.deliver(dm(fake, "one"))).status).toBe(503);
    answer = () => ({ kind: "retry", reason: "being admitted elsewhere" });
    expect((await fake.deliver(dm(fake, "two"))).status).toBe(503);
    answer = () => ({ kind: "rejected", reason: "attachment too large" });
    expect((await fake.deliver(dm(fake, "three"))).status).toBe(200);
  });

  it("acknowledges within the deadline while a slow admission finishes in the background", async () => {
    let admitted = false;
    const { fake } = await setup({
      ackDeadlineMs: 300,
      handler: async () => {
        await new Promise((r) => setTimeout(r, 1500));
        admitted = true;
        return undefined;
      },
    });
    const started = Date.now();
    expect((await fake.deliver(dm(fake, "slow"))).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(1200);
    expect(admitted).toBe(false);
    await waitFor(() => admitted, "the admission to finish");
  });

  it("journals an early-acknowledged event until admitted; one it cannot journal is not acknowledged (503)", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "slack-acked-"));
    cleanups.push(async () => rmSync(stateDir, { recursive: true, force: true }));
    let release: () => void = () => {};
    const { fake } = await setup({
      stateDir,
      ackDeadlineMs: 200,
      handler: () => new Promise<undefined>((resolve) => (release = () => resolve(undefined))),
    });
    const journal = join(stateDir, "slack", "default", "acked");
    expect((await fake.deliver(dm(fake, "slow"))).status).toBe(200);
    // On disk while its admission runs, gone once it is over.
    expect(readdirSync(journal)).toHaveLength(1);
    expect(readFileSync(join(journal, readdirSync(journal)[0] as string), "utf8")).toContain('"slow"');
    release();
    await waitFor(() => readdirSync(journal).length === 0, "the journal to empty");
    // Nowhere to journal (a file where its folder would be): not acknowledged, so Slack sends it again.
    rmSync(join(stateDir, "slack"), { recursive: true });
    writeFileSync(join(stateDir, "slack"), "not a folder");
    expect((await fake.deliver(dm(fake, "slow again"))).status).toBe(503);
    release();
  });

  it("an early-acknowledged event still unadmitted when the adapter stops stays journaled for the next start", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "slack-acked-stop-"));
    cleanups.push(async () => rmSync(stateDir, { recursive: true, force: true }));
    const { fake, adapter } = await setup({
      stateDir,
      ackDeadlineMs: 100,
      lateRetry: { initialMs: 50, maxMs: 50 },
      // Redis is slow, then gone while the hub stops.
      handler: () =>
        new Promise((resolve) => setTimeout(() => resolve({ kind: "retry", reason: "Redis down" }), 300)),
    });
    const journal = join(stateDir, "slack", "default", "acked");
    expect((await fake.deliver(dm(fake, "in the window"))).status).toBe(200);
    await adapter.stop();
    // The tries end with the stop: the event was never admitted, and it stays for the next start.
    await new Promise((r) => setTimeout(r, 800));
    const left = readdirSync(journal);
    expect(left).toHaveLength(1);
    expect(readFileSync(join(journal, left[0] as string), "utf8")).toContain("in the window");
  });

  it("an adapter stopped while an acknowledged event is still tried ends its tries and leaves it to the next start", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "slack-acked-stopped-"));
    cleanups.push(async () => rmSync(stateDir, { recursive: true, force: true }));
    const { lines, logger } = capturedLogger();
    let tries = 0;
    const { fake, adapter } = await setup({
      stateDir,
      logger,
      ackDeadlineMs: 100,
      lateRetry: { initialMs: 20, maxMs: 20 },
      // Slow (the early ack), then Redis down for as long as the adapter runs.
      handler: async () => {
        if (++tries === 1) await new Promise((r) => setTimeout(r, 300));
        return { kind: "retry", reason: "Redis down" };
      },
    });
    const journal = join(stateDir, "slack", "default", "acked");
    // Sent as Slack's redelivery: every try of its admission then says so in a line, even one the stopped
    // adapter refuses without calling the handler, so a try after the stop shows.
    const delivered = await fake.deliver(dm(fake, "stopped while tried"), {
      retryNum: 1,
      retryReason: "http_timeout",
    });
    expect(delivered.status).toBe(200);
    await waitFor(() => tries >= 4, "tries after the ack");
    await adapter.stop();
    const triesSaid = () => lines.filter((l) => l.msg === "slack redelivered an event").length;
    const atStop = triesSaid();
    await new Promise((r) => setTimeout(r, 300));
    expect(triesSaid()).toBe(atStop);
    const left = readdirSync(journal);
    expect(left).toHaveLength(1);
    const text = readFileSync(join(journal, left[0] as string), "utf8");
    expect(text).toContain("stopped while tried");
    expect(text).not.toContain("settled");
    // The next start (another process: this file under a dead pid's name) admits it, then settles it.
    renameSync(join(journal, left[0] as string), join(journal, `${PID_SPACE}-${deadPid()}-0a1b2c3d.jsonl`));
    const next = await setup({ stateDir });
    await waitFor(() => next.received.some((f) => f.body === "stopped while tried"), "its readmission");
    await waitFor(() => readdirSync(journal).length === 0, "the record settled");
  });

  it("an event whose admission fails after its ack is tried until it is admitted, however long Redis is down", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "slack-acked-long-"));
    cleanups.push(async () => rmSync(stateDir, { recursive: true, force: true }));
    const { logger, lines } = captureLogs("info");
    let tries = 0;
    const { fake } = await setup({
      stateDir,
      ackDeadlineMs: 100,
      lateRetry: { initialMs: 5, maxMs: 10 },
      logger,
      // Slow and failing (the early ack), then failing fast: more tries than the old limit of 8.
      handler: async () => {
        tries++;
        if (tries === 1) await new Promise((r) => setTimeout(r, 300));
        return tries <= 13 ? { kind: "retry", reason: "Redis down" } : { kind: "accepted" };
      },
    });
    const journal = join(stateDir, "slack", "default", "acked");
    expect((await fake.deliver(dm(fake, "through an outage"))).status).toBe(200);
    await waitFor(() => tries >= 10, "the tries to go on");
    // Still unsettled on disk while it is tried.
    expect(readFileSync(join(journal, readdirSync(journal)[0] as string), "utf8")).not.toContain("settled");
    await waitFor(() => tries === 14, "the admission to take");
    await waitFor(() => readdirSync(journal).length === 0, "the record settled once admitted");
    const said = lines.map((l) => JSON.parse(l) as { msg: string; tries?: number });
    expect(said.filter((l) => l.msg.startsWith("slack event not admitted after its ack"))).toHaveLength(1);
    expect(said.filter((l) => l.msg === "slack event admitted after its ack").map((l) => l.tries)).toEqual([
      13,
    ]);
    expect(said.some((l) => l.msg.includes("not answered"))).toBe(false);
  });

  it("an event whose slow admission fails after its ack is admitted by trying again (Slack will not resend it)", async () => {
    let tries = 0;
    const { fake } = await setup({
      ackDeadlineMs: 200,
      lateRetry: { initialMs: 50, maxMs: 100 },
      handler: async () => {
        tries++;
        if (tries > 2) return { kind: "accepted" };
        await new Promise((r) => setTimeout(r, 400));
        return { kind: "retry", reason: "redis is down" };
      },
    });
    expect((await fake.deliver(dm(fake, "slow and failing"))).status).toBe(200);
    await waitFor(() => tries === 3, "the admission tried again until it took");
    await new Promise((r) => setTimeout(r, 300));
    expect(tries).toBe(3);
  });

  it("skips bot messages, its own messages, edits and joins; a file share carries its files as media", async () => {
    const { fake, received } = await setup();
    const m = (text: string, extra: Record<string, unknown>) =>
      fake.envelope(messageEvent(fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, text), extra));
    await fake.deliver(m("bot", { subtype: "bot_message", bot_id: "B0OTHER001" }));
    await fake.deliver(m("own", { user: fake.botUserId, bot_id: fake.botId }));
    await fake.deliver(
      m("edit", { subtype: "message_changed", message: { text: "x", user: "U1", ts: "1.1" } }),
    );
    await fake.deliver(m("join", { subtype: "channel_join" }));
    await fake.deliver(
      m("a file", {
        subtype: "file_share",
        files: [{ id: "F0FILE0001", name: "a.png", mimetype: "image/png", size: 1234 }],
      }),
    );
    expect(received.map((f) => [f.body, f.media])).toEqual([
      ["a file", [{ kind: "image", mime: "image/png", ref: "F0FILE0001", size: 1234, name: "a.png" }]],
    ]);
  });

  // One app installed in several workspaces gets all their events at one URL, signed with one secret.
  it("ignores an event sent for another workspace's installation, but not one of a channel shared with it", async () => {
    const { fake, received } = await setup();
    const elsewhere = { team_id: "T0OTHER001", enterprise_id: null, user_id: "U0OTHERBOT", is_bot: true };
    const other = {
      ...dm(fake, "for the other workspace"),
      team_id: "T0OTHER001",
      authorizations: [elsewhere],
    };
    expect((await fake.deliver(other)).status).toBe(200);
    const connect = {
      ...dm(fake, "in a channel shared between organizations"),
      team_id: "T0OTHER001",
      authorizations: [elsewhere],
      is_ext_shared_channel: true,
    };
    await fake.deliver(connect);
    await fake.deliver(dm(fake, "for this workspace"));
    await waitFor(() => received.some((f) => f.body === "for this workspace"), "the last event");
    expect(received.map((f) => f.body)).toEqual([
      "in a channel shared between organizations",
      "for this workspace",
    ]);
  });

  it("handles app_mention and message for one mention one after the other, as one message id", async () => {
    let running = 0;
    let overlapped = false;
    const { fake, received } = await setup({
      handler: async () => {
        running++;
        if (running > 1) overlapped = true;
        await new Promise((r) => setTimeout(r, 100));
        running--;
        return undefined;
      },
    });
    const msg = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, `<@${fake.botUserId}> hi`);
    const statuses = await Promise.all([
      fake.deliver(fake.envelope(messageEvent(msg))),
      fake.deliver(fake.envelope(appMentionEvent(msg))),
    ]);
    expect(statuses.map((s) => s.status)).toEqual([200, 200]);
    expect(overlapped).toBe(false);
    expect(received.map((f) => [f.messageId, f.body, f.wasMentioned, f.replyToMessageId])).toEqual([
      [msg.ts, "hi", true, msg.ts],
      [msg.ts, "hi", true, msg.ts],
    ]);
  });

  it("maps thread_ts to threadId; a reply in a thread the bot answered in counts as addressed to it", async () => {
    const { fake, adapter, received } = await setup();
    const root = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, "root");
    const follow = (text: string) =>
      fake.envelope(
        messageEvent(fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, text, root.ts), {
          parent_user_id: SLACK_IDS.user,
        }),
      );
    await fake.deliver(follow("before"));
    const target = {
      channel: "slack",
      accountId: "default",
      chatId: SLACK_IDS.group,
      replyToMessageId: root.ts,
    };
    await adapter.send({ replyId: "r1", index: 0, text: "answer" }, target);
    await fake.deliver(follow("after"));
    expect(received.map((f) => [f.body, f.threadId, f.wasMentioned])).toEqual([
      ["before", root.ts, false],
      ["after", root.ts, true],
    ]);
  });
});

describe("slack sends", () => {
  const target = (chatId: string, extra: Partial<ReplyTarget> = {}): ReplyTarget => ({
    channel: "slack",
    accountId: "default",
    chatId,
    ...extra,
  });

  it("posts mrkdwn: in a DM directly, in a channel in a thread on the message, in a thread in it", async () => {
    const { fake, adapter } = await setup();
    const root = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, "q");
    await adapter.send(
      { replyId: "a", index: 0, text: "**hi** @channel <b>" },
      target(SLACK_IDS.directChat, { replyToMessageId: "1.2" }),
    );
    await adapter.send(
      { replyId: "b", index: 0, text: "x" },
      target(SLACK_IDS.group, { replyToMessageId: root.ts }),
    );
    await adapter.send(
      { replyId: "c", index: 1, text: "y" },
      target(SLACK_IDS.group, { threadId: "9.9", replyToMessageId: root.ts }),
    );
    const posts = fake.callsOf("chat.postMessage").map((c) => c.params);
    expect(posts.map((p) => [p.channel, p.text, p.thread_ts])).toEqual([
      [SLACK_IDS.directChat, "*hi* @\u2060channel &lt;b&gt;", undefined],
      [SLACK_IDS.group, "x", root.ts],
      [SLACK_IDS.group, "y", "9.9"],
    ]);
    expect(JSON.parse(String(posts[2]?.metadata))).toEqual({
      event_type: SEGMENT_EVENT_TYPE,
      event_payload: { reply_id: "c", index: 1 },
    });
  });

  it("turns a 429 into a RateLimitedError with Retry-After, without retrying the post itself", async () => {
    const { fake, adapter } = await setup();
    fake.failNext("chat.postMessage", { status: 429, retryAfter: 3 });
    const error = await adapter
      .send({ replyId: "r", index: 0, text: "x" }, target(SLACK_IDS.directChat))
      .catch((e) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBe(3000);
    expect(fake.callsOf("chat.postMessage")).toHaveLength(1);
    expect(fake.posted()).toHaveLength(0);
  });

  it("gives a segment up for good when Slack refuses it (channel_not_found)", async () => {
    const { fake, adapter } = await setup();
    fake.failNext("chat.postMessage", { error: "channel_not_found" });
    const error = await adapter
      .send({ replyId: "r", index: 0, text: "x" }, target("C0GONE0001"))
      .catch((e) => e);
    expect(error).toBeInstanceOf(PermanentSendError);
  });

  it("turns the channel failed, with what to do, when Slack refuses the bot token at runtime; connected again once it takes it", async () => {
    const { fake, adapter } = await setup();
    expect(adapter.status().state).toBe("connected");
    // A channel refusing one message says nothing about the channel as a whole.
    fake.failNext("chat.postMessage", { error: "channel_not_found" });
    await adapter.send({ replyId: "r0", index: 0, text: "x" }, target("C0GONE0001")).catch(() => {});
    expect(adapter.status().state).toBe("connected");
    fake.failNext("chat.postMessage", { error: "token_revoked" });
    const error = await adapter
      .send({ replyId: "r1", index: 0, text: "x" }, target(SLACK_IDS.directChat))
      .catch((e) => e);
    expect(error).toBeInstanceOf(PermanentSendError);
    expect(adapter.status()).toMatchObject({
      state: "failed",
      reason: expect.stringMatching(/token_revoked.*channels\.slack\.botToken.*SLACK_BOT_TOKEN/),
    });
    fake.failNext("chat.update", { error: "invalid_auth" });
    await adapter
      .edit("1.1", { replyId: "r1", index: 0, text: "y" }, target(SLACK_IDS.directChat))
      .catch(() => {});
    expect(adapter.status().state).toBe("failed");
    await adapter.send({ replyId: "r2", index: 0, text: "z" }, target(SLACK_IDS.directChat));
    expect(adapter.status().state).toBe("connected");
  });

  it("never posts twice when a slow first attempt lands after the client gave up", async () => {
    const { fake, adapter } = await setup({ uncertainSettleMs: 1500 });
    fake.slowNext("chat.postMessage", 800);
    const segment = { replyId: "slow", index: 0, text: "only once" };
    const aborted = await adapter
      .send(segment, target(SLACK_IDS.directChat), { signal: AbortSignal.timeout(200) })
      .catch((e) => e);
    expect(aborted).toBeInstanceOf(Error);
    expect(fake.posted()).toHaveLength(0);
    // The retry right away waits for the uncertain attempt to settle.
    const early = await adapter.send(segment, target(SLACK_IDS.directChat)).catch((e) => e);
    expect(early).toBeInstanceOf(RateLimitedError);
    await waitFor(() => fake.posted().length === 1, "the slow post to land");
    await new Promise((r) => setTimeout(r, (early as RateLimitedError).retryAfterMs));
    const result = await adapter.send(segment, target(SLACK_IDS.directChat));
    expect(fake.posted().map((m) => [m.ts, m.text])).toEqual([[result.messageId, "only once"]]);
    // Found once, the mark is gone: the next segment posts normally.
    await adapter.send({ replyId: "slow", index: 1, text: "next" }, target(SLACK_IDS.directChat));
    expect(fake.posted().map((m) => m.text)).toEqual(["only once", "next"]);
  });
});

describe("slack working indicator, reactions and edits", () => {
  it("sets and removes the bot's reaction by name, from an emoji or a name; a repeat is no error", async () => {
    const { fake, adapter } = await setup({});
    const msg = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, "q");
    const t: ReplyTarget = { channel: "slack", accountId: "default", chatId: SLACK_IDS.group };
    await adapter.react(t, msg.ts, "👀");
    await adapter.react(t, msg.ts, "👀");
    expect(fake.reactionsOn(SLACK_IDS.group, msg.ts)).toEqual(["eyes"]);
    await adapter.react(t, msg.ts, ":white_check_mark:");
    expect(fake.reactionsOn(SLACK_IDS.group, msg.ts)).toEqual(["white_check_mark"]);
    await adapter.react(t, msg.ts, null);
    expect(fake.reactionsOn(SLACK_IDS.group, msg.ts)).toEqual([]);
  });

  it("edits a posted message (chat.update) and deletes it (chat.delete); a message gone is refused for good", async () => {
    const { fake, adapter } = await setup({});
    const t: ReplyTarget = { channel: "slack", accountId: "default", chatId: SLACK_IDS.directChat };
    const { messageId } = await adapter.send({ replyId: "p", index: 0, text: "draft …" }, t);
    await adapter.edit(messageId ?? "", { replyId: "r", index: 0, text: "**final**" }, t);
    expect(fake.posted(SLACK_IDS.directChat).map((m) => [m.text, m.edits])).toEqual([["*final*", 1]]);
    await adapter.deleteMessage(t, messageId ?? "");
    await adapter.deleteMessage(t, messageId ?? "");
    expect(fake.posted(SLACK_IDS.directChat)).toEqual([]);
    await expect(adapter.edit(messageId ?? "", { replyId: "r", index: 0, text: "x" }, t)).rejects.toThrow(
      PermanentSendError,
    );
  });

  it("uses the assistant thread status in a DM thread, cleared when the refreshes stop", async () => {
    const { fake, adapter } = await setup({ workingIdleMs: 300 });
    await adapter.sendTyping({
      channel: "slack",
      accountId: "default",
      chatId: SLACK_IDS.directChat,
      threadId: "5.5",
    });
    await waitFor(() => fake.callsOf("assistant.threads.setStatus").length === 2, "the status to clear");
    expect(fake.callsOf("assistant.threads.setStatus").map((c) => c.params.status)).toEqual([
      "is thinking…",
      "",
    ]);
  });
});

describe("slack socket mode", () => {
  it("acknowledges an envelope only after admission; a failed admission is left for redelivery", async () => {
    let fail = true;
    const { fake, received } = await setup({
      mode: "socket",
      handler: async () => (fail ? { kind: "retry", reason: "redis is down" } : undefined),
    });
    await waitFor(() => fake.socketConnected, "the socket connection");
    const envelope = dm(fake, "over the socket");
    expect(await fake.deliverSocket(envelope, { timeoutMs: 800 })).toBe(false);
    fail = false;
    expect(await fake.deliverSocket(envelope, { retryAttempt: 1 })).toBe(true);
    expect(received.map((f) => f.body)).toEqual(["over the socket", "over the socket"]);
    // Garbage is acknowledged and dropped, never redelivered forever.
    expect(await fake.deliverSocket(fake.envelope({ type: "message", channel: 42 }))).toBe(true);
    // Even an envelope the Socket Mode library itself cannot read (no event) is acknowledged.
    expect(await fake.deliverSocket({ type: "event_callback" })).toBe(true);
    expect(await fake.deliverSocket({ type: "event_callback", event: null })).toBe(true);
  });
});

describe("slack socket mode reconnects", () => {
  it("reconnects when Slack asks it to (disconnect: refresh_requested) and keeps admitting", async () => {
    const { lines, logger } = capturedLogger();
    const { fake, adapter, received } = await setup({ mode: "socket", logger });
    await waitFor(() => fake.socketConnected, "the first connection");
    expect(adapter.status().state).toBe("connected");
    fake.disconnectSocket("refresh_requested");
    await waitFor(() => fake.socketConnections === 2 && fake.socketConnected, "the reconnection", 15_000);
    // The reconnect's log line says why.
    expect(lines.filter((l) => l.state === "reconnecting").map((l) => l.reason)).toContain(
      "Slack asked for a new connection (refresh_requested)",
    );
    await waitFor(() => adapter.status().state === "connected", "connected again");
    expect(await fake.deliverSocket(dm(fake, "after the refresh"))).toBe(true);
    expect(received.map((f) => f.body)).toEqual(["after the refresh"]);
  }, 20_000);
});

describe("slack socket mode with Slack unreachable", () => {
  it("keeps trying when a reconnect finds Slack down (no crash), and connects once Slack is back", async () => {
    const port = await freePort();
    let fake = await startFakeSlack({ port });
    const received: string[] = [];
    const adapter = socketAdapter(fake, createLogger({ level: "silent" }));
    cleanups.push(async () => {
      await adapter.stop();
      await fake.close();
    });
    await adapter.start(async (fields) => {
      received.push(fields.body);
      return { kind: "accepted" };
    });
    // Slack goes away: the socket drops and apps.connections.open is refused when the client reconnects.
    await fake.close();
    await waitFor(
      () => /fetch failed|ECONNREFUSED|request/i.test(adapter.status().reason ?? ""),
      "a failed reconnect",
      20_000,
    );
    expect(adapter.status().state).toBe("reconnecting");
    fake = await startFakeSlack({ port });
    await waitFor(() => fake.socketConnected, "the connection once Slack is back", 20_000);
    expect(await fake.deliverSocket(dm(fake, "back again"))).toBe(true);
    expect(received).toEqual(["back again"]);
  }, 60_000);
});

describe("slack socket reconnects", () => {
  it("a reconnect failing again and again for the same reason is one warning per attempt, not two", async () => {
    const port = await freePort();
    const fake = await startFakeSlack({ port });
    const { lines, logger } = capturedLogger();
    const adapter = socketAdapter(fake, logger);
    cleanups.push(async () => {
      await adapter.stop();
      await fake.close();
    });
    await adapter.start(async () => ({ kind: "accepted" }));
    await fake.close();
    const failed = () => lines.filter((l) => l.msg === "slack socket could not reconnect; trying again");
    await waitFor(() => failed().length >= 2, "two failed reconnects", 20_000);
    // Each failed try says why and when the next is; the state line only says a change (as the status cell did).
    const stateLines = lines.filter((l) => l.msg === "slack connection state changed");
    const reasons = new Set(stateLines.map((l) => l.reason));
    expect(stateLines.length).toBe(reasons.size);
  }, 30_000);
});

describe("slack start", () => {
  const logger = createLogger({ level: "silent" });

  it("fails for good on a refused token, with a clear reason in status()", async () => {
    const fake = await startFakeSlack();
    cleanups.push(() => fake.close());
    const adapter = new SlackAdapter({
      botToken: "xoxb-wrong",
      signingSecret: "s",
      apiUrl: fake.apiUrl,
      state: memoryState(),
      logger,
    });
    const error = await adapter.start(async () => ({ kind: "accepted" })).catch((e) => e);
    expect(error).toBeInstanceOf(ChannelRefusedError);
    expect(adapter.status()).toMatchObject({
      state: "failed",
      reason: expect.stringMatching(/invalid_auth/),
    });
    expect(adapter.status().reason).toContain("channels.slack.botToken");
  });

  it("a rate-limited auth.test at start says how long to wait; a page that is not Slack's is not quoted as a code", async () => {
    const fake = await startFakeSlack();
    cleanups.push(() => fake.close());
    const adapter = new SlackAdapter({
      botToken: fake.botToken,
      signingSecret: "s",
      apiUrl: fake.apiUrl,
      state: memoryState(),
      logger,
    });
    fake.failNext("auth.test", { status: 429, retryAfter: 5 });
    const limited = await adapter.start(async () => ({ kind: "accepted" })).catch((e) => e);
    // The hub's supervisor waits at least that long before it starts the channel again.
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect(limited.retryAfterMs).toBe(5000);
    fake.failNext("auth.test", { error: "<html><body>Sign in to the hotel Wi-Fi</body></html>" });
    const portal = await adapter.start(async () => ({ kind: "accepted" })).catch((e) => e);
    expect(String(portal.message)).toMatch(/not Slack's .* check channels\.slack\.apiUrl/);
    expect(String(portal.message)).not.toContain("<html>");
  });

  it("refuses socket mode without an app-level token, and counts an unreachable Slack as transient", async () => {
    const socket = new SlackAdapter({ botToken: "xoxb-x", mode: "socket", state: memoryState(), logger });
    const refused = await socket.start(async () => ({ kind: "accepted" })).catch((e) => e);
    expect(refused).toBeInstanceOf(ChannelRefusedError);
    expect(String(refused.message)).toMatch(/appToken/);
    const down = new SlackAdapter({
      botToken: "xoxb-x",
      signingSecret: "s",
      apiUrl: "http://127.0.0.1:9/api/",
      state: memoryState(),
      logger,
    });
    const transient = await down.start(async () => ({ kind: "accepted" })).catch((e) => e);
    expect(transient).toBeInstanceOf(Error);
    expect(transient).not.toBeInstanceOf(ChannelRefusedError);
    expect(down.status().state).toBe("reconnecting");
  });
});
