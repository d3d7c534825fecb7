import {
  ChannelRefusedError,
  captureLogs,
  createLogger,
  PermanentSendError,
  RateLimitedError,
} from "@hub/core";
import {
  type FakeDiscord,
  type FakeDiscordOptions,
  memoryStateStore,
  startFakeDiscord,
  startFakeOpenAI,
} from "@hub/fakes";
import { afterEach, describe, expect, it } from "vitest";
import { startTestHub } from "../../../test/support/hub.js";
import { waitFor } from "../../../test/support/redis.js";
import { type DiscordAdapter, NONCE_LENGTH } from "../src/index.js";
import { adapterFor, fencesBalanced } from "./harness.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const logger = () => createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });

/** A logger whose lines (parsed) the test reads. */
function capturedLogger() {
  const { logger: log, records: lines } = captureLogs("info");
  return { log, lines };
}

/** The reasons of the "discord gateway reconnecting" log lines. */
const reconnectReasons = (lines: Array<Record<string, unknown>>) =>
  lines.filter((l) => l.msg === "discord gateway reconnecting").map((l) => String(l.reason));

/** Runs `body`, then checks that no promise was rejected unhandled meanwhile (discord.js's async listeners). */
async function withoutUnhandledRejections(body: () => Promise<void>): Promise<void> {
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => void rejections.push(reason);
  process.on("unhandledRejection", onRejection);
  try {
    await body();
  } finally {
    process.off("unhandledRejection", onRejection);
  }
  expect(rejections).toEqual([]);
}

/** A hub with a Discord adapter (discord.js against the fake Discord) and a fake model. */
async function setup(
  fakeOptions: FakeDiscordOptions = {},
  log = logger(),
  /** Runs on the fake before the hub connects (a malformed first HELLO or READY). */
  prepare?: (fake: FakeDiscord) => void,
) {
  const fake = await startFakeDiscord(fakeOptions);
  prepare?.(fake);
  const model = await startFakeOpenAI();
  const adapter = adapterFor(fake, log);
  const hub = await startTestHub(
    {
      agent: { model: "fake/m" },
      models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
      channels: {
        discord: {
          dmPolicy: "allowlist",
          allowFrom: [fake.user.id],
          groups: { [fake.channelId]: { requireMention: true } },
        },
      },
    },
    "discord",
    [adapter],
  );
  cleanups.push(async () => {
    await hub.dispose();
    await fake.close();
    await model.close();
  });
  const modelSaw = (text: string) =>
    model.requests.filter((r) => JSON.stringify(r.messages.at(-1)).includes(text)).length;
  return { fake, model, hub, adapter, modelSaw };
}

/** An adapter against a fake Discord, without a hub (for sends). */
async function bare(
  fakeOptions: FakeDiscordOptions = {},
  log = logger(),
): Promise<{ fake: FakeDiscord; adapter: DiscordAdapter }> {
  const fake = await startFakeDiscord(fakeOptions);
  const adapter = adapterFor(fake, log);
  cleanups.push(async () => {
    await adapter.stop();
    await fake.close();
  });
  return { fake, adapter };
}

describe("discord adapter", () => {
  it("answers a thread message in the thread, replying to it, with typing shown while the run is active", async () => {
    const { fake, model } = await setup();
    // Slower than the second typing waits for.
    model.script({ text: "In the thread.", chunkSize: 2, delayMs: 250 });
    const asked = fake.userMessage({
      channelId: fake.threadId,
      content: "thread question",
      mentionBot: true,
    });
    await waitFor(() => fake.sent(fake.threadId).length === 1, "the thread answer");
    const [answer] = fake.sent(fake.threadId);
    expect(answer?.message.content).toBe("In the thread.");
    expect(answer?.body.message_reference).toEqual({ message_id: asked.id, fail_if_not_exists: false });
    expect(fake.sent(fake.channelId)).toEqual([]);
    expect(fake.typing).toContain(fake.threadId);
  });

  it("answers in a thread the client has not cached: the thread is read from Discord, not guessed from the message", async () => {
    const { fake, model, adapter } = await setup();
    model.script({ text: "Found the thread." });
    // The thread leaves discord.js's cache (a sweep, or a thread created while the client was away).
    fake.gateway.dispatch("THREAD_DELETE", {
      id: fake.threadId,
      guild_id: fake.guildId,
      parent_id: fake.channelId,
      type: 11,
    });
    await waitFor(() => !adapter.client.channels.cache.has(fake.threadId), "the thread out of the cache");
    fake.userMessage({ channelId: fake.threadId, content: "uncached thread question", mentionBot: true });
    await waitFor(() => fake.sent(fake.threadId).length === 1, "the thread answer");
    expect(fake.sent(fake.threadId)[0]?.message.content).toBe("Found the thread.");
    expect(fake.calls.some((c) => c.method === "GET /channels/:id")).toBe(true);
  });

  it("shows typing only once a run has taken about a second: a quick answer costs no typing call", async () => {
    const { fake, model } = await setup();
    model.script({ text: "Quick." });
    const askedAt = Date.now();
    fake.userMessage({ channelId: fake.threadId, content: "quick question", mentionBot: true });
    await waitFor(() => fake.sent(fake.threadId).length === 1, "the answer");
    // Past the typing delay: a typing call that was only late would show up now. On a quiet machine
    // there is none; on a busy one the run may outlast the delay, and its typing comes after it.
    await new Promise((r) => setTimeout(r, 1500));
    for (const at of fake.typingAt) expect(at - askedAt).toBeGreaterThanOrEqual(990);
  });

  it("ignores bots (its own echoes included), webhooks and system messages", async () => {
    const { fake, model, modelSaw } = await setup();
    const otherBot = {
      id: "300000000000000001",
      username: "other",
      discriminator: "0",
      global_name: null,
      avatar: null,
      bot: true,
    };
    fake.userMessage({
      channelId: fake.channelId,
      content: "from a bot",
      mentionBot: true,
      author: otherBot,
    });
    fake.userMessage({
      channelId: fake.channelId,
      content: "from a webhook",
      mentionBot: true,
      webhook: true,
    });
    fake.userMessage({ channelId: fake.channelId, content: "joined", mentionBot: true, type: 7 });
    model.script({ text: "Hello, person." });
    fake.userMessage({ channelId: fake.channelId, content: "from a person", mentionBot: true });
    await waitFor(() => fake.sent(fake.channelId).length === 1, "the answer to the person");
    // The fake echoes the bot's own message as a MESSAGE_CREATE; give it time to be (not) handled.
    await new Promise((r) => setTimeout(r, 500));
    expect(model.requests).toHaveLength(1);
    expect(modelSaw("from a person")).toBe(1);
    expect(fake.sent()).toHaveLength(1);
  });

  it("answers a mention of the bot's role, with the body free of the mention", async () => {
    const { fake, model } = await setup();
    model.script({ text: "Role heard." });
    fake.userMessage({ channelId: fake.channelId, content: "ping via role", mentionBotRole: true });
    await waitFor(() => fake.sent(fake.channelId).length === 1, "the answer to the role mention");
    const last = JSON.stringify(model.requests.at(-1)?.messages.at(-1));
    expect(last).toContain("ping via role");
    expect(last).not.toContain(`<@&${fake.botRoleId}>`);
  });

  it("@everyone, @here and role mentions in the agent's text ping no one", async () => {
    const { fake, model } = await setup();
    model.script({ text: `@everyone @here <@&${fake.botRoleId}> <@${fake.user.id}> look at this` });
    fake.userMessage({ channelId: fake.channelId, content: "announce it", mentionBot: true });
    await waitFor(() => fake.sent(fake.channelId).length === 1, "the answer");
    const [sent] = fake.sent(fake.channelId);
    expect(sent?.message.content).toContain("@everyone");
    expect(sent?.pinged).toEqual({ everyone: false, users: [], roles: [] });
    expect(sent?.body.allowed_mentions).toMatchObject({ parse: [] });
  });

  it("close 1006 mid-conversation: the gateway resumes (status reconnecting, then connected) and the next message is answered", async () => {
    const { fake, model, adapter } = await setup();
    model.script({ text: "First." });
    fake.userMessage({ channelId: fake.dmChannelId, content: "one" });
    await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the first answer");
    const states: string[] = [];
    const poll = setInterval(() => states.push(adapter.status().state), 5);
    fake.gateway.close(1006);
    await waitFor(() => states.includes("reconnecting"), "status reconnecting");
    await waitFor(
      () => adapter.status().state === "connected" && fake.gateway.liveConnections === 1,
      "reconnected",
    );
    clearInterval(poll);
    expect(fake.gateway.stats.resumes).toBe(1);
    model.script({ text: "Second." });
    fake.userMessage({ channelId: fake.dmChannelId, content: "two" });
    await waitFor(() => fake.sent(fake.dmChannelId).length === 2, "the answer after the reconnect");
    expect(fake.sent(fake.dmChannelId).map((m) => m.message.content)).toEqual(["First.", "Second."]);
  });

  it.each([
    [
      "close 1005 (no status)",
      (f: FakeDiscord) => f.gateway.close(1005),
      "with code 1005 (no status given); resuming",
    ],
    [
      "close 1006 (dropped)",
      (f: FakeDiscord) => f.gateway.close(1006),
      "with code 1006 (the connection dropped without a close frame); resuming",
    ],
    [
      "close 4000 (unknown error)",
      (f: FakeDiscord) => f.gateway.close(4000, "Unknown error"),
      "Discord closed the gateway connection with code 4000 (an unknown error); resuming",
    ],
    [
      "close 1000 (normal)",
      (f: FakeDiscord) => f.gateway.close(1000),
      "with code 1000 (a normal close); identifying again",
    ],
    [
      "op 7 (reconnect request)",
      (f: FakeDiscord) => f.gateway.requestReconnect(),
      "Discord asked the bot to reconnect (op 7); resuming",
    ],
    [
      "op 9 (session invalid: identify again)",
      (f: FakeDiscord) => f.gateway.invalidateSessions(false),
      "Discord invalidated the session (op 9, not resumable); identifying again",
    ],
  ])(
    "after %s the gateway comes back, the log and status name the cause, and the next message is answered",
    async (_name, fault, reason) => {
      const { log, lines } = capturedLogger();
      const { fake, model, adapter } = await setup({}, log);
      const before = fake.gateway.stats.connections;
      const reasons: string[] = [];
      const poll = setInterval(() => reasons.push(adapter.status().reason ?? ""), 2);
      fault(fake);
      await waitFor(() => fake.gateway.stats.connections > before, "a new connection", 15_000);
      await waitFor(
        () => fake.gateway.liveConnections === 1 && adapter.status().state === "connected",
        "connected again",
        15_000,
      );
      clearInterval(poll);
      expect(reconnectReasons(lines)).toEqual([expect.stringContaining(reason)]);
      expect(reasons.filter((r) => r !== "")).toEqual(
        expect.arrayContaining([expect.stringContaining(reason)]),
      );
      model.script({ text: "Still here." });
      fake.userMessage({ channelId: fake.dmChannelId, content: "still there?" });
      await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the answer", 10_000);
    },
    30_000,
  );

  it("a new session in the running process (close 1000: identify again) reads back a DM written in the gap", async () => {
    const { fake, model } = await setup();
    model.script({ text: "First." }, { text: "Second." });
    fake.userMessage({ channelId: fake.dmChannelId, content: "one" });
    await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the first answer");
    const identifies = fake.gateway.stats.identifies;
    fake.gateway.close(1000);
    // Written while no connection is up: Discord never dispatches it to the new session.
    fake.userMessage({ channelId: fake.dmChannelId, content: "while down" });
    await waitFor(() => fake.gateway.stats.identifies > identifies, "a new session", 15_000);
    await waitFor(() => fake.sent(fake.dmChannelId).length === 2, "the answer to the missed DM", 15_000);
    expect(fake.sent(fake.dmChannelId).map((m) => m.message.content)).toEqual(["First.", "Second."]);
  });

  it("op 9 with a resumable session is resumed on the same connection, and the log says why", async () => {
    const { log, lines } = capturedLogger();
    const { fake, model } = await setup({}, log);
    const before = fake.gateway.stats.connections;
    fake.gateway.invalidateSessions(true);
    await waitFor(() => lines.some((l) => l.msg === "discord gateway resumed"), "the resume");
    expect(lines.find((l) => l.msg === "discord gateway session invalidated")?.reason).toBe(
      "Discord invalidated the session (op 9, resumable); resuming it",
    );
    expect(reconnectReasons(lines)).toEqual([]);
    expect(fake.gateway.stats.connections).toBe(before);
    model.script({ text: "Still here." });
    fake.userMessage({ channelId: fake.dmChannelId, content: "still there?" });
    await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the answer", 10_000);
  });

  it("a fatal close mid-session (4004) marks the channel failed with what to do, and the hub keeps running", async () => {
    const { fake, adapter, hub } = await setup();
    fake.gateway.close(4004, "Authentication failed.");
    await waitFor(() => adapter.status().state === "failed", "status failed");
    expect(adapter.status().reason).toContain("DISCORD_BOT_TOKEN");
    const health = await fetch(`${hub.url}healthz`);
    expect(health.ok).toBe(true);
  });

  it("a zombie gateway (heartbeats not acknowledged) is closed (4200) and resumed; a message sent meanwhile is answered", async () => {
    const { log, lines } = capturedLogger();
    const { fake, model, adapter } = await setup({ heartbeatIntervalMs: 300 }, log);
    const reasons: string[] = [];
    const poll = setInterval(() => reasons.push(adapter.status().reason ?? ""), 5);
    fake.gateway.goSilent();
    model.script({ text: "Back." });
    fake.userMessage({ channelId: fake.dmChannelId, content: "are you alive?" });
    await waitFor(
      () => fake.sent(fake.dmChannelId).length === 1,
      "the answer after the zombie close",
      15_000,
    );
    clearInterval(poll);
    expect(reasons.some((r) => r.includes("zombie"))).toBe(true);
    expect(reconnectReasons(lines)[0]).toBe(
      "Discord stopped acknowledging the bot's heartbeats (a zombie connection), so the bot closed it; resuming",
    );
    expect(fake.gateway.stats.clientCloses).toContain(4200);
    expect(fake.gateway.stats.resumes).toBeGreaterThanOrEqual(1);
    expect(adapter.status().state).toBe("connected");
  });

  it.each([
    ["no data (d: null)", () => null],
    ["a heartbeat interval of 0", () => ({ heartbeat_interval: 0 })],
    ["a heartbeat interval past a timer's range", () => ({ heartbeat_interval: 1e12 })],
  ])(
    "a HELLO with %s neither ends the process nor beats in a loop: Discord's usual interval, messages answered",
    async (_, hello) => {
      const { log, lines } = capturedLogger();
      await withoutUnhandledRejections(async () => {
        const { fake, model } = await setup({}, log, (f) => {
          f.gateway.nextHello = hello;
        });
        model.script({ text: "Alive." });
        fake.userMessage({ channelId: fake.dmChannelId, content: "after a strange hello" });
        await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the answer", 15_000);
        // At 41,250 ms: the first beat within it (jitter), and no tight loop of them.
        await new Promise((r) => setTimeout(r, 1000));
        expect(fake.gateway.stats.heartbeats).toBeLessThanOrEqual(1);
        expect(fake.gateway.stats.connections).toBe(1);
        expect(lines.filter((l) => String(l.problem).includes("heartbeat_interval"))).toHaveLength(1);
      });
    },
  );

  it.each([
    ["user", (d: Record<string, unknown>) => ({ ...d, user: undefined })],
    ["guilds", (d: Record<string, unknown>) => ({ ...d, guilds: undefined })],
    ["any data", () => null],
  ])(
    "a READY without %s is dropped and the bot identifies again: not deaf, not ended",
    async (field, ready) => {
      const { log, lines } = capturedLogger();
      await withoutUnhandledRejections(async () => {
        const { fake, model, adapter } = await setup({}, log, (f) => {
          f.gateway.nextReady = ready;
        });
        model.script({ text: "Heard you." });
        fake.userMessage({ channelId: fake.dmChannelId, content: "after a strange ready" });
        await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the answer", 20_000);
        expect(fake.gateway.stats.identifies).toBe(2);
        expect(adapter.status().state).toBe("connected");
        const problems = lines.filter((l) => String(l.problem).startsWith("Discord's READY lacked"));
        expect(problems.map((l) => l.problem)).toEqual([
          expect.stringContaining(field === "any data" ? "its data" : field),
        ]);
      });
    },
    30_000,
  );

  it("an INVALID_SESSION without d, and a READY whose resume URL no WebSocket can open, do not end the process", async () => {
    await withoutUnhandledRejections(async () => {
      const { fake, model, adapter } = await setup({}, logger(), (f) => {
        f.gateway.nextReady = (d) => ({ ...d, resume_gateway_url: "not a url" });
      });
      await waitFor(() => adapter.status().state === "connected", "connected");
      // A close the bot resumes after: at the gateway's own URL, the READY's being unusable.
      fake.gateway.close(4000, "Unknown error");
      await waitFor(() => fake.gateway.stats.resumes === 1, "the resume", 15_000);
      fake.gateway.sendRaw(JSON.stringify({ op: 9, d: null, s: null, t: null }));
      await waitFor(() => fake.gateway.stats.identifies === 2, "a new identify", 15_000);
      model.script({ text: "Still here." });
      fake.userMessage({ channelId: fake.dmChannelId, content: "after the strange frames" });
      await waitFor(() => fake.sent(fake.dmChannelId).length === 1, "the answer", 15_000);
    });
  }, 40_000);

  it("malformed dispatches (which make discord.js itself throw) are dropped: no unhandled rejection, the next message answered", async () => {
    const { fake, model, adapter } = await setup();
    await withoutUnhandledRejections(async () => {
      const valid = fake.messageCreatePayload({ channelId: fake.dmChannelId, content: "x" });
      const broken: unknown[] = [
        null,
        "MESSAGE_CREATE",
        { ...valid, author: "eve" },
        { ...valid, channel_id: null },
        { ...valid, content: 7, mentions: {} },
        { ...valid, attachments: "none" },
        { ...valid, author: { ...(valid.author as object), id: { nested: true } } },
        { ...valid, referenced_message: "abc" },
        // Ids that are no snowflakes: Discord's are strings of digits.
        { ...valid, id: "abc" },
        { ...valid, channel_id: "general" },
      ];
      for (const d of broken) fake.gateway.dispatch("MESSAGE_CREATE", d);
      fake.gateway.dispatch("INTERACTION_CREATE", { id: "1", type: 2, data: null, token: 5 });
      fake.gateway.dispatch("INTERACTION_CREATE", null);
      await new Promise((r) => setTimeout(r, 500));
      model.script({ text: "Unshaken." });
      fake.userMessage({ channelId: fake.dmChannelId, content: "still fine?" });
      await waitFor(
        () => fake.sent(fake.dmChannelId).length === 1,
        "the answer after the malformed dispatches",
      );
      expect(fake.sent(fake.dmChannelId)[0]?.message.content).toBe("Unshaken.");
      expect(adapter.status().state).toBe("connected");
    });
  });

  it("a slash command /status is deferred within 3 s and answered with the session's status", async () => {
    const { fake } = await setup();
    await waitFor(() => fake.commands.has("global"), "commands registered");
    expect(fake.commands.get("global")?.map((c) => c.name)).toEqual(["stop", "new", "status", "queue"]);
    const i = fake.slashCommand("status", { channelId: fake.dmChannelId });
    await waitFor(() => i.content !== undefined, "the /status answer", 3000);
    expect(i.callbackType).toBe(5);
    expect((i.respondedAt ?? Infinity) - i.createdAt).toBeLessThan(3000);
    expect(i.content).toContain("Model: fake/m");
    const queue = fake.slashCommand("queue", {
      channelId: fake.dmChannelId,
      args: [{ name: "mode", value: "collect" }],
    });
    await waitFor(() => queue.content !== undefined, "the /queue answer", 3000);
    expect(queue.content).toBe("Queue mode set to collect.");
    const bogus = fake.slashCommand("queue", {
      channelId: fake.dmChannelId,
      args: [{ name: "mode", value: "bogus" }],
    });
    await waitFor(() => bogus.content !== undefined, "the /queue mode:bogus answer", 3000);
    expect(bogus.content).toMatch(/^"bogus" is not a queue mode\. Queue mode is collect\./);
    expect(fake.sent()).toEqual([]);
  });

  it("an unknown slash command (a stale registration) is answered with the bot's commands, and no model runs", async () => {
    const { fake, model } = await setup();
    const i = fake.slashCommand("nonexistent", {
      channelId: fake.dmChannelId,
      args: [{ name: "text", value: "hello" }],
    });
    await waitFor(() => i.content !== undefined, "the answer to the unknown command", 3000);
    expect(i.callbackType).toBe(5);
    expect(i.content).toBe(
      "/nonexistent is not a command of this bot. Its commands are /stop, /new, /status and /queue.",
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(model.requests).toEqual([]);
    expect(fake.sent()).toEqual([]);
  });

  it("a slash command the hub does not take (a stranger's DM) is answered, not left thinking; a refusal notice is kept", async () => {
    const { fake } = await setup();
    const stranger = {
      id: "300000000000000002",
      username: "eve",
      discriminator: "0",
      global_name: "Eve",
      avatar: null,
    };
    const dropped = fake.slashCommand("status", { channelId: fake.dmChannelId, user: stranger });
    await waitFor(() => dropped.content !== undefined, "an answer to the dropped command", 8000);
    expect(dropped.callbackType).toBe(5);
    expect(dropped.content).toBe("This command cannot be used here.");
    // In the allowed channel the stranger may talk but not run commands: the hub's refusal is the answer.
    const refused = fake.slashCommand("status", { channelId: fake.channelId, user: stranger });
    await waitFor(() => refused.content !== undefined, "the refusal", 8000);
    expect(refused.content).toContain("only the owner and approved people can use /status");
    await new Promise((r) => setTimeout(r, 3500));
    expect(refused.content).toContain("only the owner and approved people can use /status");
  }, 25_000);

  it("splits a long answer into messages of at most 2,000 characters and 17 lines, code fences balanced, in order", async () => {
    const { fake, model } = await setup();
    const code = ["```ts", ...Array.from({ length: 50 }, (_, i) => `const line${i} = ${i};`), "```"].join(
      "\n",
    );
    model.script({ text: `Here is the code:\n\n${code}\n\nDone.` });
    fake.userMessage({ channelId: fake.dmChannelId, content: "code please" });
    await waitFor(
      () => fake.sent(fake.dmChannelId).some((m) => m.message.content.includes("Done.")),
      "all segments",
      20_000,
    );
    const texts = fake.sent(fake.dmChannelId).map((m) => m.message.content);
    expect(texts.length).toBeGreaterThanOrEqual(4);
    for (const t of texts) {
      expect(t.length).toBeLessThanOrEqual(2000);
      expect(t.split("\n").length).toBeLessThanOrEqual(17);
      expect(fencesBalanced(t)).toBe(true);
    }
    const lines = texts.flatMap((t) => [...t.matchAll(/const line(\d+)/g)].map((m) => Number(m[1])));
    expect(lines).toEqual(Array.from({ length: 50 }, (_, i) => i));
  }, 30_000);
});

describe("discord sends", () => {
  it("the same segment sent twice (one nonce, enforce_nonce) makes one message", async () => {
    const { fake, adapter } = await bare();
    const target = { channel: "discord", accountId: "default", chatId: fake.channelId };
    const segment = { replyId: "run-1", index: 0, text: "exactly once" };
    const first = await adapter.send(segment, target);
    const second = await adapter.send(segment, target);
    expect(second.messageId).toBe(first.messageId);
    expect(fake.sent(fake.channelId)).toHaveLength(1);
    const bodies = fake.calls
      .filter((c) => c.route === `/channels/${fake.channelId}/messages`)
      .map((c) => c.body);
    expect(bodies).toHaveLength(2);
    const nonce = (bodies[0] as { nonce: string }).nonce;
    expect(nonce.length).toBeLessThanOrEqual(NONCE_LENGTH);
    expect(bodies).toEqual([
      expect.objectContaining({ nonce, enforce_nonce: true }),
      expect.objectContaining({ nonce, enforce_nonce: true }),
    ]);
    await adapter.send({ ...segment, index: 1, text: "next" }, target);
    expect(fake.sent(fake.channelId)).toHaveLength(2);
  });

  it("a 401 on a send shows the channel failed with what to do, and does not leave later sends without the token", async () => {
    const { fake, adapter } = await bare();
    const target = { channel: "discord", accountId: "default", chatId: fake.channelId };
    await adapter.start(async () => ({ kind: "accepted" }));
    await waitFor(() => adapter.status().state === "connected", "connected");
    fake.failNext("POST /channels/:id/messages", { status: 401 });
    const refused = await adapter
      .send({ replyId: "t", index: 0, text: "refused" }, target)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PermanentSendError);
    expect(adapter.status()).toMatchObject({
      state: "failed",
      reason: expect.stringMatching(/^Discord refused the bot token on a send .*DISCORD_BOT_TOKEN/),
    });
    // @discordjs/rest dropped the token on the 401: without it set again, this send failed ("Expected token").
    await adapter.send({ replyId: "t", index: 1, text: "accepted again" }, target);
    expect(fake.sent(fake.channelId).map((m) => m.message.content)).toEqual(["accepted again"]);
    expect(adapter.status().state).toBe("connected");
    // A 401 on a typing call drops it too (it goes through no send's error handling).
    fake.failNext("POST /channels/:id/typing", { status: 401 });
    await expect(adapter.sendTyping(target)).rejects.toThrow();
    await adapter.send({ replyId: "t", index: 2, text: "after a refused typing call" }, target);
    expect(fake.sent(fake.channelId)).toHaveLength(2);
  });

  it("a 429 becomes RateLimitedError with Discord's retry_after; the exhausted bucket refuses the next send before it is made", async () => {
    const { fake, adapter } = await bare();
    const target = { channel: "discord", accountId: "default", chatId: fake.channelId };
    await adapter.send({ replyId: "r", index: 0, text: "first" }, target);
    fake.failNext("POST /channels/:id/messages", { status: 429, retryAfter: 3 });
    const error = await adapter
      .send({ replyId: "r", index: 1, text: "second" }, target)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBeGreaterThanOrEqual(3000);
    // discord.js remembers the bucket (X-RateLimit-Remaining 0, Reset-After 3): no request until it resets.
    const calls = fake.calls.length;
    const early = await adapter
      .send({ replyId: "r", index: 1, text: "second" }, target)
      .catch((e: unknown) => e);
    expect(early).toBeInstanceOf(RateLimitedError);
    expect((early as RateLimitedError).retryAfterMs).toBeGreaterThan(2000);
    expect(fake.calls.length).toBe(calls);
    expect(fake.sent().map((m) => m.message.content)).toEqual(["first"]);
  });

  it("a refusal of the whole channel (50007, 50001, 10003) is said so; Missing Permissions (50013) may be this message's own", async () => {
    const { fake, adapter } = await bare();
    const target = { channel: "discord", accountId: "default", chatId: fake.channelId };
    const refusal = async (failure: Parameters<FakeDiscord["failNext"]>[1]) => {
      fake.failNext("POST /channels/:id/messages", failure);
      return adapter.send({ replyId: "r", index: 0, text: "refused" }, target).catch((e: unknown) => e);
    };
    const chatWide = [
      await refusal({ status: 403, code: 50007, message: "Cannot send messages to this user" }),
      await refusal({ status: 403, code: 50001, message: "Missing Access" }),
      await refusal({ status: 404, code: 10003, message: "Unknown Channel" }),
    ];
    expect(chatWide.map((e) => e instanceof PermanentSendError && e.chatRefuses)).toEqual([true, true, true]);
    const own = await refusal({ status: 403, code: 50013, message: "Missing Permissions" });
    expect([own instanceof PermanentSendError, (own as PermanentSendError).chatRefuses]).toEqual([
      true,
      false,
    ]);
  });

  it("a global 429 holds sends for Discord's retry_after", async () => {
    const { fake, adapter } = await bare();
    const target = { channel: "discord", accountId: "default", chatId: fake.dmChannelId };
    fake.failNext("POST /channels/:id/messages", { status: 429, retryAfter: 2, global: true });
    const error = await adapter.send({ replyId: "g", index: 0, text: "x" }, target).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBeGreaterThanOrEqual(2000);
    expect((error as Error).message).toContain("global");
  });

  it("says in the drop log line which message it was and what was wrong with it", async () => {
    const { logger: log, records: lines } = captureLogs("debug");
    const { fake, adapter } = await bare({}, log);
    const seen: string[] = [];
    await adapter.start(async (fields) => {
      seen.push(fields.body);
      return { kind: "accepted" };
    });
    const valid = fake.messageCreatePayload({ channelId: fake.dmChannelId, content: "x" });
    const { author: _, ...noAuthor } = valid;
    fake.gateway.dispatch("MESSAGE_CREATE", noAuthor);
    fake.gateway.dispatch("MESSAGE_CREATE", { ...valid, content: null });
    fake.gateway.dispatch("MESSAGE_CREATE", { ...valid, id: 1234567890123 });
    const drop = "dropping a Discord message that does not match Discord's Message shape";
    const drops = () => lines.filter((l) => l.msg === drop);
    await waitFor(() => drops().length === 3, "three drop lines");
    expect(drops().map((l) => [l.level, l.messageId, l.channelId, l.reason])).toEqual([
      [40, valid.id, fake.dmChannelId, "author: Invalid input: expected object, received undefined"],
      [40, valid.id, fake.dmChannelId, "content: Invalid input: expected string, received null"],
      [40, 1234567890123, fake.dmChannelId, "id: Invalid input: expected string, received number"],
    ]);
    expect(seen).toEqual([]);
  });

  it("a message the hub could not take yet (retry, or a throw) is handed over again; the gateway never redelivers", async () => {
    const { fake, adapter } = await bare();
    const seen: string[] = [];
    let calls = 0;
    await adapter.start(async (fields) => {
      calls++;
      if (calls === 1) return { kind: "retry", reason: "Redis is unreachable" };
      if (calls === 2) throw new Error("boom");
      seen.push(fields.body);
      return { kind: "accepted" };
    });
    fake.userMessage({ channelId: fake.dmChannelId, content: "keep trying" });
    await waitFor(() => seen.length === 1, "the message accepted on the third try");
    expect(seen).toEqual(["keep trying"]);
    expect(calls).toBe(3);
  });

  it("a message admitted while the adapter stops still moves its channel's read-back mark (else a later restart answers it again)", async () => {
    const fake = await startFakeDiscord();
    const state = memoryStateStore();
    const adapter = adapterFor(fake, logger(), { state });
    cleanups.push(async () => {
      await adapter.stop();
      await fake.close();
    });
    let admit: () => void = () => {};
    let arrived = false;
    await adapter.start(async () => {
      arrived = true;
      await new Promise<void>((resolve) => (admit = resolve));
      return { kind: "accepted" };
    });
    const sent = fake.userMessage({ channelId: fake.dmChannelId, content: "taken during the stop" });
    await waitFor(() => arrived, "the admission to begin");
    // The hub stops (SIGTERM) while the admission is still in Redis; it finishes: the message is taken.
    const stopped = adapter.stop();
    admit();
    await stopped;
    expect(await state.get(`discord:default:last:${fake.dmChannelId}`)).toBe(sent.id);
  });

  it("send errors carry Discord's status and message, never the request URL (an interaction's token)", async () => {
    const { fake, adapter } = await bare();
    let handedOver = false;
    await adapter.start(async () => {
      handedOver = true;
      return { kind: "accepted" };
    });
    const i = fake.slashCommand("status", { channelId: fake.dmChannelId });
    // The command reaches the hub once the adapter has the deferral's answer and the interaction's token (as
    // in the hub, whose reply comes after that); the fake's record of the deferral can come before, and a send
    // then finds no deferred reply and posts in the channel.
    await waitFor(() => handedOver, "the command handed to the hub");
    const target = {
      channel: "discord",
      accountId: "default",
      chatId: fake.dmChannelId,
      replyToMessageId: `interaction:${i.id}`,
    };
    fake.failNext("PATCH /webhooks/:id/:token/messages/@original", { status: 500 });
    const transient = await adapter
      .send({ replyId: "e", index: 0, text: "x" }, target)
      .catch((e: unknown) => e);
    expect(transient).toBeInstanceOf(Error);
    expect(transient).not.toBeInstanceOf(PermanentSendError);
    fake.failNext("PATCH /webhooks/:id/:token/messages/@original", { status: 404 });
    const permanent = await adapter
      .send({ replyId: "e", index: 0, text: "x" }, target)
      .catch((e: unknown) => e);
    expect(permanent).toBeInstanceOf(PermanentSendError);
    for (const error of [transient, permanent] as Error[]) {
      const seen = JSON.stringify({
        ...error,
        message: error.message,
        stack: error.stack,
        cause: String(error.cause),
      });
      expect(seen).not.toContain(i.token);
    }
    // Answered on the next try.
    await adapter.send({ replyId: "e", index: 0, text: "done" }, target);
    expect(i.content).toBe("done");
  });

  it("a refused Message Content intent (close 4014) is a refusal (no retry helps) saying what to do", async () => {
    const { log, lines } = capturedLogger();
    const { adapter } = await bare({ messageContentAllowed: false }, log);
    const error = await adapter.start(async () => ({ kind: "accepted" })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelRefusedError);
    expect((error as Error).message).toContain("Privileged Gateway Intents");
    expect(adapter.status()).toMatchObject({
      state: "failed",
      reason: expect.stringContaining("Message Content intent"),
    });
    // Thrown to whoever started it, who says it once: the adapter itself logs no warning or error about it.
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
  });

  it("with guilds configured, slash commands are registered per guild, not globally", async () => {
    const fake = await startFakeDiscord();
    const adapter = adapterFor(fake, logger(), {
      guilds: {
        [fake.guildId]: { requireMention: true, allowFrom: [] },
        "*": { requireMention: true, allowFrom: [] },
      },
    });
    cleanups.push(async () => {
      await adapter.stop();
      await fake.close();
    });
    await adapter.start(async () => ({ kind: "accepted" }));
    await waitFor(() => fake.commands.has(fake.guildId), "guild commands registered");
    expect(fake.commands.get(fake.guildId)?.map((c) => c.name)).toEqual(["stop", "new", "status", "queue"]);
    expect(fake.commands.has("global")).toBe(false);
    expect(adapter.status().state).toBe("connected");
  });

  it("a spent daily session-start limit is said as such (not as a network problem), and tried again later", async () => {
    const fake = await startFakeDiscord({ sessionStartsRemaining: 0 });
    const adapter = adapterFor(fake, logger());
    cleanups.push(async () => {
      await adapter.stop();
      await fake.close();
    });
    const error = await adapter.start(async () => ({ kind: "accepted" })).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(ChannelRefusedError);
    expect((error as Error).message).toMatch(/daily limit of gateway session starts for this bot is used up/);
    expect((error as Error).message).not.toMatch(/restApi and the network/);
    expect(adapter.status()).toMatchObject({ state: "reconnecting" });
    expect(fake.gateway.stats.connections).toBe(0);
  });

  it("a gateway that never says HELLO holds neither start (a transient failure) nor stop", async () => {
    const fake = await startFakeDiscord({ hello: false });
    const adapter = adapterFor(fake, logger(), { startWaitMs: 300 });
    cleanups.push(async () => {
      await adapter.stop();
      await fake.close();
    });
    const started = Date.now();
    const error = await adapter.start(async () => ({ kind: "accepted" })).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5000);
    // Transient (the supervisor tries again), not a refusal.
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(ChannelRefusedError);
    expect((error as Error).message).toContain("did not get ready");
    expect(adapter.status()).toMatchObject({
      state: "reconnecting",
      reason: expect.stringContaining("did not get ready"),
    });
    // A second start waits for the same login: no second connection.
    await expect(adapter.start(async () => ({ kind: "accepted" }))).rejects.toThrow(/did not get ready/);
    expect(fake.gateway.stats.connections).toBe(1);
    const stopping = Date.now();
    await adapter.stop();
    expect(Date.now() - stopping).toBeLessThan(5000);
    expect(adapter.status().state).toBe("stopped");
  });

  it("guilds apply to slash commands too: a command in a guild that is not allowed is refused without reaching the hub", async () => {
    const fake = await startFakeDiscord();
    const adapter = adapterFor(fake, logger(), {
      guilds: { "123456789012345678": { requireMention: true, allowFrom: [] } },
    });
    cleanups.push(async () => {
      await adapter.stop();
      await fake.close();
    });
    const handed: string[] = [];
    await adapter.start(async (fields) => {
      handed.push(fields.body);
      return { kind: "accepted" };
    });
    const i = fake.slashCommand("status", { channelId: fake.channelId });
    await waitFor(() => i.content !== undefined, "the refusal");
    expect(i.content).toBe("This command cannot be used here.");
    expect(handed).toEqual([]);
  });

  it("a bad token marks the channel failed with what to do", async () => {
    const fake = await startFakeDiscord();
    const adapter = adapterFor(fake, logger(), { token: "wrong" });
    cleanups.push(async () => {
      await adapter.stop();
      await fake.close();
    });
    await expect(adapter.start(async () => ({ kind: "accepted" }))).rejects.toBeInstanceOf(
      ChannelRefusedError,
    );
    expect(adapter.status()).toMatchObject({
      state: "failed",
      reason: expect.stringContaining("DISCORD_BOT_TOKEN"),
    });
  });
});

describe("discord: what a process that never connects says", () => {
  it("building the adapter (an agent or delivery process) logs nothing; its first start says connecting once", async () => {
    const fake = await startFakeDiscord();
    const { log, lines } = capturedLogger();
    const adapter = adapterFor(fake, log);
    cleanups.push(async () => {
      await adapter.stop();
      await fake.close();
    });
    expect(lines.map((l) => l.msg)).toEqual([]);
    await adapter.start(async () => ({ kind: "accepted" }));
    expect(lines.filter((l) => l.msg === "discord connecting")).toHaveLength(1);
    expect(lines.findIndex((l) => l.msg === "discord connecting")).toBe(0);
  });
});
