import type { ConformanceHarness, OutboundMessage } from "@hub/conformance";
import { type AdapterStateStore, createLogger, type HubLogger } from "@hub/core";
import {
  type FakeSlack,
  readMrkdwn,
  type SilentServer,
  type SlackMessage,
  startFakeSlack,
  startSilentServer,
} from "@hub/fakes";
import { freePort } from "../../../test/support/hub-process.js";
import { SlackAdapter, type SlackAdapterOptions } from "../src/index.js";

export { freePort };

/** An in-memory adapter state store (tests); the hub uses Redis. */
export function memoryState(): AdapterStateStore & { values: Map<string, string> } {
  const values = new Map<string, string>();
  return { values, get: async (k) => values.get(k), set: async (k, v) => void values.set(k, v) };
}

/** The suite's Slack ids: a user, a channel, and the user's DM with the bot. */
export const SLACK_IDS = { user: "U0USER0001", group: "C0GROUP001", directChat: "D0DIRECT01" } as const;

/** What the bot posted, as Slack shows it. */
export function outboundOf(m: SlackMessage): OutboundMessage {
  const view = readMrkdwn(m.text);
  return {
    text: view.text,
    threadId: m.thread_ts,
    replyToMessageId: m.thread_ts,
    wellFormed: view.wellFormed,
    file: m.files?.[0]?.data && { filename: m.files[0].name, data: m.files[0].data },
  };
}

/** A message event as Slack sends it for a user's message (`message.im` or `message.channels`). */
export function messageEvent(m: SlackMessage, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "message",
    channel: m.channel,
    channel_type: m.channel.startsWith("D") ? "im" : "channel",
    user: m.user,
    text: m.text,
    ts: m.ts,
    client_msg_id: `cm-${m.ts}`,
    team: "T0TEAM001",
    ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}),
    ...extra,
  };
}

/** The `app_mention` event Slack sends (besides `message`) when a channel message mentions the bot. */
export function appMentionEvent(m: SlackMessage): Record<string, unknown> {
  const { channel_type: _, ...event } = messageEvent(m);
  return { ...event, type: "app_mention" };
}

/** Options of the Slack harness. */
export interface SlackHarnessOptions {
  mode: "http" | "socket";
  adapter?: Partial<SlackAdapterOptions>;
}

/** Tokens the fake and the adapter agree on (fixed, so an adapter can be built before Slack is up). */
const TOKENS = {
  botToken: "xoxb-conformance",
  appToken: "xapp-1-conformance",
  signingSecret: "conformance-signing-secret",
} as const;
const STRANGER = { user: "U0STRANGER", channel: "D0STRANGER" } as const;

/** The Slack harness of the shared conformance suite: Bolt against the fake Slack, events signed like Slack's. */
export function slackHarness(
  options: SlackHarnessOptions,
): ConformanceHarness & { fake: () => FakeSlack; logger: HubLogger; adapter: () => SlackAdapter } {
  let fake: FakeSlack;
  let adapter: SlackAdapter;
  let threadRoot: SlackMessage | undefined;
  let apiPort = 0;
  let silent: SilentServer | undefined;
  let gatewayPort = 0;
  let logger = createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });
  const platformUp = async () => {
    fake = await startFakeSlack({ ...TOKENS, port: apiPort });
    if (gatewayPort) fake.eventsUrl = `http://127.0.0.1:${gatewayPort}/slack/events`;
    threadRoot = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, "a thread to talk in");
  };
  // How Slack hands over an event: a signed POST to the Events URL, or an envelope on the socket.
  const deliver = async (payload: unknown, retry?: number): Promise<{ status?: number }> => {
    if (options.mode === "socket") {
      // No HTTP status on a socket: an unacknowledged envelope (Slack would redeliver it) counts as a 503.
      const acked = await fake.deliverSocket(payload as Record<string, unknown>, {
        timeoutMs: 2000,
        ...(retry ? { retryAttempt: retry } : {}),
      });
      return { status: acked ? 200 : 503 };
    }
    const how = retry ? { retryNum: retry, retryReason: "http_timeout" } : {};
    const isObject = typeof payload === "object" && payload !== null && !Array.isArray(payload);
    const { status } = isObject
      ? await fake.deliver(payload as Record<string, unknown>, how)
      : await fake.deliverRaw(JSON.stringify(payload) ?? "null", how);
    return { status };
  };
  const dmFrom = (who: { user: string; channel: string }, text: string) =>
    fake.envelope(messageEvent(fake.userMessage(who.channel, who.user, text)));
  return {
    channel: "slack",
    textLimit: 4000,
    supportsThreads: true,
    get threadId() {
      return threadRoot?.ts;
    },
    ids: { ...SLACK_IDS },
    fake: () => fake,
    adapter: () => adapter,
    get logger() {
      return logger;
    },
    async start(startOptions = {}) {
      if (startOptions.logger) logger = startOptions.logger;
      apiPort = await freePort();
      gatewayPort = options.mode === "http" ? await freePort() : 0;
      if (startOptions.silent) silent = await startSilentServer(apiPort);
      else if (!startOptions.unreachable) await platformUp();
      adapter = new SlackAdapter({
        ...TOKENS,
        mode: options.mode,
        apiUrl: `http://127.0.0.1:${apiPort}/api/`,
        state: memoryState(),
        logger,
        ...options.adapter,
      });
      return adapter;
    },
    platformUp,
    hubConfig: () => (gatewayPort ? { gateway: { port: gatewayPort } } : {}),
    stop: async () => {
      await silent?.close();
      await fake?.close();
    },
    async direct(text) {
      const envelope = fake.envelope(
        messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, text)),
      );
      await deliver(envelope);
      return envelope;
    },
    async directWithFile(text, file) {
      // Slack: a `file_share` message whose file is served at url_private with the bot token.
      const shared = fake.uploadFile({
        name: file.name,
        mime: file.mime,
        bytes: file.bytes,
        user: SLACK_IDS.user,
      });
      const m = fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, text);
      const envelope = fake.envelope(
        messageEvent(m, { subtype: "file_share", files: [shared], upload: false }),
      );
      await deliver(envelope);
      return envelope;
    },
    downloads: () => fake.downloads.length,
    async group(text, o = {}) {
      // A reply to the bot is a message in the thread its last answer is in (a thread is never nested).
      const lastBot = fake.posted(SLACK_IDS.group).at(-1);
      const thread = o.threadId ?? (o.replyToBot ? (lastBot?.thread_ts ?? lastBot?.ts) : undefined);
      const body = o.mention ? `<@${fake.botUserId}> ${text}` : text;
      const m = fake.userMessage(SLACK_IDS.group, SLACK_IDS.user, body, thread);
      const root = thread ? fake.messageAt(SLACK_IDS.group, thread) : undefined;
      const message = fake.envelope(messageEvent(m, root ? { parent_user_id: root.user } : {}));
      // A mention arrives twice (app_mention and message), at the same time: one run.
      await Promise.all([
        deliver(message),
        o.mention ? deliver(fake.envelope(appMentionEvent(m))) : undefined,
      ]);
      return message;
    },
    async commandForAnotherBot() {
      // Another app's bot message that mentions ours: bots never start runs.
      const m = fake.userMessage(SLACK_IDS.group, "U0OTHERBOT", `<@${fake.botUserId}> status`);
      await deliver(fake.envelope(messageEvent(m, { subtype: "bot_message", bot_id: "B0OTHER001" })));
    },
    async redeliver(ref) {
      await deliver(ref as Record<string, unknown>, 1);
    },
    async malformed() {
      if (options.mode === "http") await fake.deliverRaw("{not json");
      await deliver(fake.envelope({ type: "message", channel: 42, ts: "yesterday" }));
    },
    rateLimitNextSend(seconds) {
      fake.failNext("chat.postMessage", { status: 429, retryAfter: seconds });
    },
    outbound: (chatId) => fake.posted(chatId).map(outboundOf),
    shown: (chatId) => fake.posted(chatId).map((m) => ({ ...outboundOf(m), edits: m.edits ?? 0 })),
    reactionsOn: (ref) => {
      const event = (ref as { event: { channel: string; ts: string } }).event;
      // Slack reacts by name; the suite speaks emoji.
      return fake.reactionsOn(event.channel, event.ts).map((name) => (name === "eyes" ? "👀" : name));
    },
    raw: {
      valid: (text) => dmFrom(STRANGER, text),
      allowed: (text) => dmFrom({ user: SLACK_IDS.user, channel: SLACK_IDS.directChat }, text),
      poison: () => [
        fake.envelope({
          type: "message",
          channel: SLACK_IDS.directChat,
          user: SLACK_IDS.user,
          ts: "not a ts",
        }),
        fake.envelope({
          type: "message",
          channel: null,
          user: SLACK_IDS.user,
          text: "no channel",
          ts: "1.000001",
        }),
        { type: "event_callback", event: "a string, not an event" },
        { type: "event_callback" },
      ],
      deliver: (payload) => deliver(payload),
    },
  };
}
