import type { ConformanceHarness, OutboundMessage } from "@hub/conformance";
import { type AdapterStateStore, createLogger, type HubLogger } from "@hub/core";
import {
  type DiscordSentMessage,
  type FakeDiscord,
  type FakeDiscordOptions,
  startFakeDiscord,
} from "@hub/fakes";
import type { APIMessage } from "discord-api-types/v10";
import { DiscordAdapter, type DiscordAdapterOptions } from "../src/index.js";

/** An in-memory adapter state store (tests); the hub uses Redis. */
export function memoryState(): AdapterStateStore & { values: Map<string, string> } {
  const values = new Map<string, string>();
  return { values, get: async (k) => values.get(k), set: async (k, v) => void values.set(k, v) };
}

/** Whether every code fence opened in a message is closed in it. */
export function fencesBalanced(text: string): boolean {
  return text.split("\n").filter((line) => /^\s*(```|~~~)/.test(line)).length % 2 === 0;
}

/** What a message the bot created looks like to the suite. */
export function outboundOf(fake: FakeDiscord, sent: DiscordSentMessage): OutboundMessage {
  const ref = sent.body.message_reference as { message_id?: string } | undefined;
  const content = sent.message.content;
  return {
    text: content,
    threadId: sent.channelId === fake.threadId ? fake.threadId : undefined,
    replyToMessageId: ref?.message_id,
    wellFormed: content.length <= 2000 && fencesBalanced(content),
  };
}

/** A Discord adapter pointed at a fake Discord (REST `api` option; the gateway URL from its /gateway/bot). */
export function adapterFor(fake: FakeDiscord, logger: HubLogger, extra: Partial<DiscordAdapterOptions> = {}) {
  return new DiscordAdapter({
    token: fake.token,
    restApi: fake.restApi,
    state: memoryState(),
    logger,
    inboundRetryMs: 100,
    ...extra,
  });
}

/** The Discord harness of the shared conformance suite: discord.js against the fake REST API and gateway. */
export function discordHarness(
  options: { fake?: FakeDiscordOptions; adapter?: Partial<DiscordAdapterOptions> } = {},
): ConformanceHarness & { fake: () => FakeDiscord; logger: HubLogger } {
  let fake: FakeDiscord;
  const logger = createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });
  // The suite reads the ids before the fake starts, so the fake is told to use these.
  const ids = { user: "100000000000000001", group: "100000000000000002", directChat: "100000000000000003" };
  return {
    channel: "discord",
    textLimit: 2000,
    supportsThreads: true,
    threadId: "100000000000000004",
    ids,
    fake: () => fake,
    logger,
    async start() {
      fake = await startFakeDiscord({
        ...options.fake,
        ids: { user: ids.user, channel: ids.group, dm: ids.directChat, thread: "100000000000000004" },
      });
      return adapterFor(fake, logger, options.adapter);
    },
    stop: async () => fake?.close(),
    direct: async (text) => fake.userMessage({ channelId: fake.dmChannelId, content: text }),
    async group(text, o = {}) {
      const channelId = o.threadId ? fake.threadId : fake.channelId;
      const lastBot = fake.sent(channelId).at(-1)?.message.id;
      return fake.userMessage({
        channelId,
        content: text,
        mentionBot: o.mention === true,
        ...(o.replyToBot && lastBot ? { replyTo: lastBot } : {}),
      });
    },
    async commandForAnotherBot() {
      fake.userMessage({ channelId: fake.channelId, content: "<@200000000000000009> /status" });
    },
    redeliver: async (ref) => fake.redeliver(ref as APIMessage),
    async malformed() {
      fake.gateway.dispatch("MESSAGE_CREATE", { id: "not-a-message", channel_id: null, author: 7 });
    },
    rateLimitNextSend(seconds) {
      fake.failNext("POST /channels/:id/messages", { status: 429, retryAfter: seconds });
    },
    outbound: (chatId) =>
      fake
        .sent()
        // A thread's messages belong to its parent channel's chat.
        .filter((m) => m.channelId === chatId || (chatId === fake.channelId && m.channelId === fake.threadId))
        .map((m) => outboundOf(fake, m)),
  };
}
