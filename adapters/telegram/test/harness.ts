import type { ConformanceHarness, OutboundMessage } from "@hub/conformance";
import { type AdapterStateStore, createLogger, type HubLogger } from "@hub/core";
import {
  type FakeTelegram,
  groupText,
  parseTelegramHtml,
  privateText,
  startFakeTelegram,
  type TextMessageUpdate,
  telegramErrors,
} from "@hub/fakes";
import { TelegramAdapter, type TelegramAdapterOptions } from "../src/index.js";

/** An in-memory adapter state store (tests); the hub uses Redis. */
export function memoryState(): AdapterStateStore & { values: Map<string, string> } {
  const values = new Map<string, string>();
  return { values, get: async (k) => values.get(k), set: async (k, v) => void values.set(k, v) };
}

const USER = 4242;
const GROUP = -1001234567;

/** Visible text and formatting verdict of what the bot sent, as Telegram would show it. */
export function outboundOf(params: Record<string, unknown>): OutboundMessage {
  const raw = String(params.text ?? "");
  const html = params.parse_mode === "HTML" ? parseTelegramHtml(raw) : undefined;
  const reply = params.reply_parameters as { message_id?: number } | undefined;
  return {
    text: html?.ok ? html.text : raw,
    threadId: params.message_thread_id === undefined ? undefined : String(params.message_thread_id),
    replyToMessageId: reply?.message_id === undefined ? undefined : String(reply.message_id),
    wellFormed: html?.ok === true,
  };
}

/** The Telegram harness of the shared conformance suite: grammY against the fake Bot API. */
export function telegramHarness(
  extra: Partial<TelegramAdapterOptions> = {},
): ConformanceHarness & { fake: () => FakeTelegram; logger: HubLogger } {
  let fake: FakeTelegram;
  const logger = createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });
  const lastBotMessage = () => {
    const sent = fake
      .callsOf("sendMessage")
      .filter((c) => String(c.params.chat_id) === String(GROUP) && !c.error_code);
    return sent.length;
  };
  return {
    channel: "telegram",
    textLimit: 4096,
    supportsThreads: true,
    threadId: "77",
    ids: { user: String(USER), group: String(GROUP), directChat: String(USER) },
    fake: () => fake,
    logger,
    async start() {
      fake = await startFakeTelegram();
      return new TelegramAdapter({
        botToken: fake.token,
        apiRoot: fake.apiRoot,
        state: memoryState(),
        logger,
        pollTimeoutSeconds: 1,
        ...extra,
      });
    },
    stop: async () => fake?.close(),
    async direct(text) {
      const update = privateText({ chatId: USER, fromId: USER, text });
      fake.pushUpdate(update);
      return update;
    },
    async group(text, options = {}) {
      const body = options.mention ? `@${fake.botUsername} ${text}` : text;
      const replyTo = options.replyToBot
        ? {
            message_id: 900_000 + lastBotMessage(),
            from: { id: fake.botId, is_bot: true, first_name: "Hub Test Bot", username: fake.botUsername },
            chat: { id: GROUP, type: "supergroup", title: "Team" },
            date: Math.floor(Date.now() / 1000),
            text: "an earlier answer",
          }
        : undefined;
      const update = groupText({
        chatId: GROUP,
        fromId: USER,
        text: body,
        title: "Team",
        ...(options.threadId ? { threadId: Number(options.threadId), isForum: true } : {}),
        ...(replyTo ? { replyTo } : {}),
      });
      fake.pushUpdate(update);
      return update;
    },
    async commandForAnotherBot() {
      fake.pushUpdate(
        groupText({ chatId: GROUP, fromId: USER, text: "/status@some_other_bot", title: "Team" }),
      );
    },
    async redeliver(ref) {
      // A replay of the same message (new update_id, as after a reconnect).
      fake.pushUpdate({ message: (ref as TextMessageUpdate).message });
    },
    async malformed() {
      fake.pushUpdate({ message: { message_id: "not a number", chat: null } });
    },
    rateLimitNextSend(seconds) {
      fake.failNext("sendMessage", telegramErrors.tooManyRequests(seconds));
    },
    outbound: (chatId) => fake.sent(chatId).map(outboundOf),
  };
}
