import { createServer } from "node:net";
import type { ConformanceHarness, OutboundMessage } from "@hub/conformance";
import { type AdapterStateStore, createLogger, type HubLogger } from "@hub/core";
import {
  type FakeTelegram,
  groupText,
  parseTelegramHtml,
  privateText,
  type SilentServer,
  startFakeTelegram,
  startSilentServer,
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
const STRANGER = 777;
const GROUP = -1001234567;
const WEBHOOK_SECRET = "conformance-secret-0123";

/** Visible text and formatting verdict of what the bot sent, as Telegram would show it. */
export function outboundOf(params: Record<string, unknown>): OutboundMessage {
  const raw = String(params.text ?? params.caption ?? "");
  const html = params.parse_mode === "HTML" ? parseTelegramHtml(raw) : undefined;
  const reply = params.reply_parameters as { message_id?: number } | undefined;
  return {
    text: html?.ok ? html.text : raw,
    threadId: params.message_thread_id === undefined ? undefined : String(params.message_thread_id),
    replyToMessageId: reply?.message_id === undefined ? undefined : String(reply.message_id),
    wellFormed: html?.ok === true || (raw === "" && params.text === undefined),
    file: uploadOf(params),
  };
}

/** The file a sendPhoto/sendDocument call uploaded (multipart part named by `attach://`). */
function uploadOf(params: Record<string, unknown>): OutboundMessage["file"] {
  const field = params.photo !== undefined ? "photo" : params.document !== undefined ? "document" : undefined;
  if (!field) return undefined;
  const ref = String(params[field]);
  const part = (ref.startsWith("attach://") ? params[ref.slice(9)] : params[field]) as
    | { filename: string; data: Buffer }
    | undefined;
  return part && { filename: part.filename, data: part.data, image: field === "photo" };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Options of the Telegram harness: polling (default) or webhook delivery, plus adapter options. */
export interface TelegramHarnessOptions extends Partial<TelegramAdapterOptions> {
  /** Deliver updates by webhook (through the hub's gateway) instead of long polling. */
  webhook?: boolean;
}

/** The Telegram harness of the shared conformance suite: grammY against the fake Bot API. */
export function telegramHarness(
  options: TelegramHarnessOptions = {},
): ConformanceHarness & { fake: () => FakeTelegram; logger: HubLogger } {
  const { webhook = false, ...extra } = options;
  let fake: FakeTelegram;
  let apiPort = 0;
  let silent: SilentServer | undefined;
  let gatewayPort = 0;
  let logger = createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" });
  const lastBotMessage = () =>
    fake.callsOf("sendMessage").filter((c) => String(c.params.chat_id) === String(GROUP) && !c.error_code)
      .length;
  // How Telegram hands over an update: a webhook POST, or the next getUpdates answer.
  const deliver = async (update: unknown): Promise<{ status?: number }> => {
    const isObject = typeof update === "object" && update !== null && !Array.isArray(update);
    if (!webhook) {
      // Telegram numbers the updates it serves by polling: the fake assigns the update_id.
      const { update_id: _assigned, ...content } = isObject
        ? (update as Record<string, unknown>)
        : { update };
      fake.pushUpdate(content);
      return {};
    }
    const { status } = isObject
      ? await fake.postWebhook(update as object)
      : await fake.postWebhookRaw(JSON.stringify(update));
    return { status };
  };
  return {
    channel: "telegram",
    textLimit: 4096,
    supportsThreads: true,
    threadId: "77",
    ids: { user: String(USER), group: String(GROUP), directChat: String(USER) },
    fake: () => fake,
    get logger() {
      return logger;
    },
    async start(startOptions = {}) {
      if (startOptions.logger) logger = startOptions.logger;
      apiPort = await freePort();
      gatewayPort = webhook ? await freePort() : 0;
      if (startOptions.silent) silent = await startSilentServer(apiPort);
      else if (!startOptions.unreachable) fake = await startFakeTelegram({ port: apiPort });
      return new TelegramAdapter({
        botToken: "123456:TEST-TOKEN",
        apiRoot: `http://127.0.0.1:${apiPort}`,
        state: memoryState(),
        logger,
        pollTimeoutSeconds: 1,
        ...(webhook
          ? {
              mode: "webhook" as const,
              webhookUrl: `http://127.0.0.1:${gatewayPort}/telegram/webhook`,
              webhookSecret: WEBHOOK_SECRET,
            }
          : {}),
        ...extra,
      });
    },
    async platformUp() {
      fake = await startFakeTelegram({ port: apiPort });
    },
    hubConfig: () => (webhook ? { gateway: { port: gatewayPort } } : {}),
    stop: async () => {
      await silent?.close();
      await fake?.close();
    },
    async direct(text) {
      const update = privateText({ chatId: USER, fromId: USER, text });
      await deliver(update);
      return update;
    },
    async group(text, groupOptions = {}) {
      const body = groupOptions.mention ? `@${fake.botUsername} ${text}` : text;
      const replyTo = groupOptions.replyToBot
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
        ...(groupOptions.threadId ? { threadId: Number(groupOptions.threadId), isForum: true } : {}),
        ...(replyTo ? { replyTo } : {}),
      });
      await deliver(update);
      return update;
    },
    async directWithFile(text, file) {
      // Telegram: the message names the file by file_id; getFile + /file/bot<token>/<path> serve it.
      const fileId = `file-${Math.random().toString(36).slice(2)}`;
      fake.setFile(fileId, file.bytes);
      const ref = { file_id: fileId, file_unique_id: `u${fileId}`, file_size: file.bytes.length };
      const { message } = privateText({ chatId: USER, fromId: USER, text: "" });
      const { text: _none, ...base } = message;
      const media =
        file.kind === "image"
          ? { photo: [{ ...ref, width: 1, height: 1 }] }
          : file.kind === "voice"
            ? { voice: { ...ref, duration: 2, mime_type: file.mime } }
            : { document: { ...ref, file_name: file.name, mime_type: file.mime } };
      const update = { message: { ...base, ...media, ...(text ? { caption: text } : {}) } };
      await deliver(update);
      return update;
    },
    downloads: () => fake.calls.filter((c) => c.method === "getFile").length,
    async commandForAnotherBot() {
      await deliver(
        groupText({ chatId: GROUP, fromId: USER, text: "/status@some_other_bot", title: "Team" }),
      );
    },
    async redeliver(ref) {
      // A replay of the same message (new update_id, as after a reconnect).
      await deliver({ message: (ref as TextMessageUpdate).message });
    },
    async malformed() {
      await deliver({ message: { message_id: "not a number", chat: null } });
    },
    rateLimitNextSend(seconds) {
      fake.failNext("sendMessage", telegramErrors.tooManyRequests(seconds));
    },
    outbound: (chatId) => fake.sent(chatId).map(outboundOf),
    shown: (chatId) =>
      fake.shown(Number(chatId)).map((m) => ({ ...outboundOf(m.params ?? {}), edits: m.edits ?? 0 })),
    reactionsOn: (ref) => {
      const { message } = ref as TextMessageUpdate;
      return fake.reactions(message.chat.id, message.message_id);
    },
    raw: {
      valid: (text) => privateText({ chatId: STRANGER, fromId: STRANGER, text, username: "stranger" }),
      allowed: (text) => privateText({ chatId: USER, fromId: USER, text }),
      poison: () => [
        { message: "a string, not a message" },
        { message: { message_id: 1, date: 1, text: "a message without chat" } },
        { message: { message_id: 2, date: 1, chat: null, text: "chat is null" } },
        { message: { message_id: 3, date: 1, chat: { id: 1, type: "private" }, from: { id: "x" }, text: 7 } },
      ],
      deliver: (payload) => deliver(payload),
      ...(webhook
        ? {}
        : {
            deliverBatch: async (payloads: unknown[]) => {
              // Queued together, so the next getUpdates answers them in one batch.
              for (const payload of payloads) fake.pushUpdate(payload as object);
            },
          }),
    },
  };
}
