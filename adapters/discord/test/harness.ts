import type { ConformanceHarness, HarnessStartOptions, OutboundMessage } from "@hub/conformance";
import { createLogger, type HubLogger } from "@hub/core";
import {
  type DiscordSentMessage,
  type FakeDiscord,
  type FakeDiscordOptions,
  freeLocalPort,
  memoryStateStore,
  type SilentServer,
  startFakeDiscord,
  startSilentServer,
} from "@hub/fakes";
import type { APIMessage } from "discord-api-types/v10";
import { DiscordAdapter, type DiscordAdapterOptions } from "../src/index.js";

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
    file: sent.files?.[0] && {
      filename: sent.files[0].filename,
      data: sent.files[0].data,
      image: sent.files[0].contentType?.startsWith("image/") === true,
    },
  };
}

/** A Discord adapter pointed at a fake Discord (REST `api` option; the gateway URL from its /gateway/bot). */
export function adapterFor(fake: FakeDiscord, logger: HubLogger, extra: Partial<DiscordAdapterOptions> = {}) {
  return new DiscordAdapter({
    token: fake.token,
    restApi: fake.restApi,
    state: memoryStateStore(),
    logger,
    inboundRetryMs: 100,
    ...extra,
  });
}

/** Raw gateway payloads for the fuzz and the poison cases. */
export interface DiscordRawPayloads {
  /** A real-shaped MESSAGE_CREATE from a user the suite does not allow (a DM: no runs). */
  valid(text: string): unknown;
  /** Dispatches one payload as a MESSAGE_CREATE on the gateway, the way Discord delivers. */
  deliver(payload: unknown): Promise<{ status?: number }>;
  /** A real-shaped MESSAGE_CREATE from the allowlisted user in the DM (answered). */
  allowed(text: string): unknown;
  /** MESSAGE_CREATE payloads that can never be accepted. */
  poison(): unknown[];
}

const STRANGER = {
  id: "100000000000000009",
  username: "eve",
  discriminator: "0",
  global_name: "Eve",
  avatar: null,
};

/** The Discord harness of the shared conformance suite: discord.js against the fake REST API and gateway. */
export function discordHarness(
  options: { fake?: FakeDiscordOptions; adapter?: Partial<DiscordAdapterOptions> } = {},
): ConformanceHarness & {
  fake: () => FakeDiscord;
  logger: HubLogger;
  raw: DiscordRawPayloads;
  platformUp(): Promise<void>;
} {
  let fake: FakeDiscord;
  let logger = createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });
  let port = 0;
  let silent: SilentServer | undefined;
  // The suite reads the ids before the fake starts, so the fake is told to use these.
  const ids = { user: "100000000000000001", group: "100000000000000002", directChat: "100000000000000003" };
  const fakeOptions = () => ({
    ...options.fake,
    port,
    ids: { user: ids.user, channel: ids.group, dm: ids.directChat, thread: "100000000000000004" },
  });
  return {
    channel: "discord",
    textLimit: 2000,
    supportsThreads: true,
    threadId: "100000000000000004",
    ids,
    fake: () => fake,
    get logger() {
      return logger;
    },
    async start(startOptions: HarnessStartOptions = {}) {
      if (startOptions.logger) logger = startOptions.logger;
      port = await freeLocalPort();
      if (startOptions.silent) silent = await startSilentServer(port);
      else if (!startOptions.unreachable) fake = await startFakeDiscord(fakeOptions());
      return new DiscordAdapter({
        token: "fake-discord-token.AAAA.bbbbbbbbbbbbbbbb",
        restApi: `http://127.0.0.1:${port}/api`,
        state: memoryStateStore(),
        logger,
        inboundRetryMs: 100,
        ...options.adapter,
      });
    },
    async platformUp() {
      fake = await startFakeDiscord(fakeOptions());
    },
    stop: async () => {
      await silent?.close();
      await fake?.close();
    },
    direct: async (text) => fake.userMessage({ channelId: fake.dmChannelId, content: text }),
    // Discord: an attachment on the CDN (a voice message is an audio/ogg attachment).
    directWithFile: async (text, file) =>
      fake.userMessage({
        channelId: fake.dmChannelId,
        content: text,
        attachments: [
          { filename: file.name, size: file.bytes.length, content_type: file.mime, data: file.bytes },
        ],
      }),
    downloads: () => fake.downloads.length,
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
    shown: (chatId) =>
      [...fake.shown(chatId), ...(chatId === fake.channelId ? fake.shown(fake.threadId) : [])]
        .sort((a, b) => a.at - b.at)
        .map((m) => ({ ...outboundOf(fake, m), edits: m.edits })),
    reactionsOn: (ref) => fake.reactions((ref as APIMessage).id),
    raw: {
      valid: (text) =>
        fake.messageCreatePayload({ channelId: fake.dmChannelId, content: text, author: STRANGER }),
      async deliver(payload) {
        fake.gateway.dispatch("MESSAGE_CREATE", payload);
        return {};
      },
      allowed: (text) => fake.messageCreatePayload({ channelId: fake.dmChannelId, content: text }),
      poison: () => [
        { id: "1", channel_id: fake.dmChannelId },
        { id: 5, channel_id: fake.dmChannelId, author: null, content: 7 },
        null,
        "MESSAGE_CREATE",
      ],
    },
  };
}
