import type { IncomingMessage, ServerResponse } from "node:http";
import { sequentialize } from "@grammyjs/runner";
import {
  type AdapterStateStore,
  type ChannelAdapter,
  type ChannelCapabilities,
  type HttpRoute,
  HubError,
  type HubLogger,
  type InboundHandler,
  isUrgentCommand,
  type OutboundSegment,
  PermanentSendError,
  RateLimitedError,
  type ReplyTarget,
  type SendResult,
  sameSecret,
} from "@hub/core";
import { Bot, type Context, GrammyError, HttpError } from "grammy";
import { z } from "zod";
import { ALLOWED_UPDATES, type BotIdentity, normalizeMessage, TelegramMessageSchema } from "./normalize.js";
import { plainTextFallback, renderTelegramHtml, telegramVisibleLength } from "./render.js";

/** Options of the Telegram adapter (from `channels.telegram` plus wiring). */
export interface TelegramAdapterOptions {
  botToken: string;
  apiRoot?: string;
  accountId?: string;
  mode?: "polling" | "webhook";
  webhookUrl?: string;
  webhookSecret?: string;
  channelPosts?: boolean;
  editedMessages?: "ignore" | "as-new";
  /** Durable state (the polling offset survives restarts). */
  state: AdapterStateStore;
  logger: HubLogger;
  /** Long-poll timeout in seconds. */
  pollTimeoutSeconds?: number;
  /** Wait after a 409 Conflict before polling again (ms). */
  conflictBackoffMs?: number;
}

const UpdateSchema = z.looseObject({
  update_id: z.number().int(),
  message: z.unknown().optional(),
  edited_message: z.unknown().optional(),
  channel_post: z.unknown().optional(),
});

const MAX_WEBHOOK_BYTES = 1024 * 1024;

const chatIdParam = (chatId: string): number | string => (/^-?\d+$/.test(chatId) ? Number(chatId) : chatId);

/**
 * Telegram through grammY: long polling (default) or webhook in, paced and
 * formatted sends out. Inbound updates are handled in order per chat (and per
 * forum topic) with `sequentialize`; `/stop` has its own key so it is never
 * stuck behind a chat's other updates.
 */
export class TelegramAdapter implements ChannelAdapter {
  readonly channel = "telegram";
  readonly capabilities: ChannelCapabilities = {
    textLimit: 4096,
    markdown: "telegram-html",
    threads: true,
    typing: true,
    edit: true,
    minSendIntervalMs: 1000,
    streamMinChars: 1500,
    maxSendsPerSecond: 30,
    measure: (markdown) => telegramVisibleLength(renderTelegramHtml(markdown)),
  };
  readonly #o: TelegramAdapterOptions;
  readonly #bot: Bot;
  readonly #log: HubLogger;
  /** The account this adapter serves (`default` for the single-account shorthand). */
  readonly accountId: string;
  #identity: BotIdentity | undefined;
  #onInbound: InboundHandler | undefined;
  #polling: Promise<void> | undefined;
  readonly #stop = new AbortController();

  constructor(options: TelegramAdapterOptions) {
    this.#o = options;
    this.accountId = options.accountId ?? "default";
    this.#log = options.logger.child({ channel: "telegram", accountId: this.accountId });
    this.#bot = new Bot(options.botToken, {
      client: { apiRoot: options.apiRoot ?? "https://api.telegram.org" },
    });
    this.#bot.use(
      sequentialize<Context>((ctx) => {
        const msg = ctx.msg;
        if (!msg) return undefined;
        const topic = msg.is_topic_message ? `:${msg.message_thread_id}` : "";
        return isUrgentCommand(msg.text ?? "") ? `stop:${msg.chat.id}${topic}` : `${msg.chat.id}${topic}`;
      }),
    );
    this.#bot.on([...ALLOWED_UPDATES], (ctx) => this.#handle(ctx));
  }

  /** The grammY bot (for tests and advanced wiring). */
  get bot(): Bot {
    return this.#bot;
  }

  async start(onInbound: InboundHandler): Promise<void> {
    this.#onInbound = onInbound;
    try {
      await this.#bot.init();
    } catch (error) {
      throw new HubError(
        "telegram_start_failed",
        `Telegram did not accept the bot token (${describe(error)}); check channels.telegram.botToken.`,
        { cause: error },
      );
    }
    this.#identity = { id: this.#bot.botInfo.id, username: this.#bot.botInfo.username };
    this.#log.info({ bot: this.#identity.username, mode: this.#o.mode ?? "polling" }, "telegram connected");
    if (this.#o.mode === "webhook") {
      if (!this.#o.webhookUrl || !this.#o.webhookSecret) {
        throw new HubError(
          "telegram_webhook_config",
          "Telegram webhook mode needs channels.telegram.webhookUrl and webhookSecret.",
        );
      }
      await this.#bot.api.setWebhook(this.#o.webhookUrl, {
        secret_token: this.#o.webhookSecret,
        allowed_updates: [...ALLOWED_UPDATES],
      });
    } else {
      this.#polling = this.#poll();
    }
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#polling;
  }

  /** Handles one raw update (from polling or the webhook). Throws when it could not be accepted, so it is retried. */
  async handleRawUpdate(raw: unknown): Promise<void> {
    const parsed = UpdateSchema.safeParse(raw);
    if (!parsed.success) {
      this.#log.warn({ issues: parsed.error.issues.length }, "dropping a malformed Telegram update");
      return;
    }
    // biome-ignore lint/suspicious/noExplicitAny: grammY's Update type; the message inside is validated in #handle.
    await this.#bot.handleUpdate(parsed.data as any);
  }

  async #handle(ctx: Context): Promise<void> {
    const identity = this.#identity;
    const onInbound = this.#onInbound;
    if (!identity || !onInbound) return;
    const kind = ctx.update.message
      ? "message"
      : ctx.update.edited_message
        ? "edited_message"
        : "channel_post";
    const msg = TelegramMessageSchema.safeParse(ctx.update[kind]);
    if (!msg.success) {
      this.#log.warn(
        { updateId: ctx.update.update_id },
        "dropping a Telegram message that does not look like one",
      );
      return;
    }
    const result = normalizeMessage(msg.data, kind, identity, {
      accountId: this.accountId,
      channelPosts: this.#o.channelPosts ?? false,
      editedMessages: this.#o.editedMessages ?? "ignore",
    });
    if ("skip" in result) {
      this.#log.debug({ updateId: ctx.update.update_id, reason: result.skip }, "telegram update not for us");
      return;
    }
    const outcome = await onInbound(result.fields);
    // Bad input is dropped with a log line; a transient failure propagates so the update is retried.
    if (outcome.kind === "rejected") {
      this.#log.warn({ updateId: ctx.update.update_id, reason: outcome.reason }, "telegram message rejected");
    } else if (outcome.kind === "retry") {
      throw new Error(outcome.reason);
    }
  }

  async #poll(): Promise<void> {
    const key = `telegram:${this.accountId}:offset`;
    const stored = await this.#o.state.get(key);
    let offset = stored ? Number(stored) : undefined;
    let backoff = 500;
    let conflictReported = false;
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      let updates: unknown[];
      try {
        updates = await this.#bot.api.getUpdates(
          {
            ...(offset !== undefined ? { offset } : {}),
            timeout: this.#o.pollTimeoutSeconds ?? 25,
            allowed_updates: [...ALLOWED_UPDATES],
          },
          // grammY types its signal with a polyfill's type; the runtime takes the standard one.
          signal as unknown as Parameters<Bot["api"]["getUpdates"]>[1],
        );
        conflictReported = false;
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof GrammyError && error.error_code === 409) {
          // Another poller or a webhook holds the bot; one clear line, then a long wait, not a storm.
          if (!conflictReported) {
            this.#log.error(
              { description: error.description },
              "Telegram refused polling (409 Conflict): another process is polling this bot or a webhook is set. Stop the other instance, or switch channels.telegram.mode to webhook; polling resumes by itself when the conflict ends.",
            );
            conflictReported = true;
          }
          await sleep(this.#o.conflictBackoffMs ?? 30_000, signal);
          continue;
        }
        this.#log.warn({ err: describe(error), backoffMs: backoff }, "telegram getUpdates failed; retrying");
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 30_000);
        continue;
      }
      backoff = 500;
      if (updates.length === 0) continue;
      try {
        // Chats run in parallel, each chat in order (sequentialize); the batch ends before the offset moves.
        await Promise.all(updates.map((u) => this.handleRawUpdate(u)));
      } catch (error) {
        this.#log.error(
          { err: describe(error) },
          "telegram updates could not be accepted; retrying the batch",
        );
        await sleep(1000, signal);
        continue;
      }
      const last = UpdateSchema.safeParse(updates.at(-1));
      if (last.success) {
        offset = last.data.update_id + 1;
        await this.#o.state.set(key, String(offset));
      }
    }
  }

  /** The webhook endpoint, mounted on the gateway's HTTP server. */
  httpRoutes(): HttpRoute[] {
    if (this.#o.mode !== "webhook") return [];
    const path = new URL(this.#o.webhookUrl ?? "http://localhost/telegram/webhook").pathname;
    return [{ method: "POST", path, handle: (req, res) => this.#webhook(req, res) }];
  }

  async #webhook(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const header = req.headers["x-telegram-bot-api-secret-token"];
    const given = Array.isArray(header) ? header[0] : header;
    if (!given || !this.#o.webhookSecret || !sameSecret(given, this.#o.webhookSecret)) {
      this.#log.warn(
        { remote: req.socket.remoteAddress },
        "telegram webhook call with a wrong secret token refused",
      );
      res.writeHead(401).end();
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_WEBHOOK_BYTES) {
        this.#log.warn({ size }, "telegram webhook body too large; dropped");
        res.writeHead(413).end();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    let update: unknown;
    try {
      update = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      this.#log.warn("telegram webhook body is not JSON; dropped");
      res.writeHead(400).end();
      return;
    }
    try {
      await this.handleRawUpdate(update);
      res.writeHead(200).end();
    } catch (error) {
      // Telegram retries non-2xx answers; dedupe makes the retry safe.
      this.#log.error({ err: describe(error) }, "telegram webhook update not accepted; Telegram will retry");
      res.writeHead(500).end();
    }
  }

  sendIntervalMs(target: ReplyTarget): number {
    // About 1 message/s in a private chat, 20/min in a group (negative chat ids are groups).
    return target.chatId.startsWith("-") ? 3000 : 1000;
  }

  async send(
    segment: OutboundSegment,
    target: ReplyTarget,
    options: { signal?: AbortSignal } = {},
  ): Promise<SendResult> {
    const chatId = chatIdParam(target.chatId);
    // grammY types its signal with a polyfill's type; the runtime takes the standard one.
    const signal = options.signal as unknown as Parameters<Bot["api"]["sendMessage"]>[3];
    const common = {
      ...(target.threadId ? { message_thread_id: Number(target.threadId) } : {}),
      ...(segment.index === 0 && target.replyToMessageId
        ? {
            reply_parameters: {
              message_id: Number(target.replyToMessageId),
              allow_sending_without_reply: true,
            },
          }
        : {}),
    };
    try {
      try {
        const sent = await this.#bot.api.sendMessage(
          chatId,
          renderTelegramHtml(segment.text),
          { ...common, parse_mode: "HTML" },
          signal,
        );
        return { messageId: String(sent.message_id) };
      } catch (error) {
        if (
          !(
            error instanceof GrammyError &&
            error.error_code === 400 &&
            /can't parse entities/i.test(error.description)
          )
        )
          throw error;
        this.#log.warn(
          { replyId: segment.replyId, index: segment.index },
          "telegram could not parse our HTML; resending as plain text",
        );
        const sent = await this.#bot.api.sendMessage(chatId, plainTextFallback(segment.text), common, signal);
        return { messageId: String(sent.message_id) };
      }
    } catch (error) {
      throw this.#classify(error);
    }
  }

  #classify(error: unknown): unknown {
    if (error instanceof GrammyError) {
      if (error.error_code === 429) return new RateLimitedError((error.parameters.retry_after ?? 1) * 1000);
      if (error.error_code === 403 || error.error_code === 400 || error.error_code === 404) {
        return new PermanentSendError(`Telegram refused the message: ${error.description}`, { cause: error });
      }
    }
    return error;
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    await this.#bot.api.sendChatAction(
      chatIdParam(target.chatId),
      "typing",
      target.threadId ? { message_thread_id: Number(target.threadId) } : {},
    );
  }

  /** Downloads an attachment on demand (`Media.ref` is the file_id). */
  async downloadMedia(fileId: string): Promise<Buffer> {
    const file = await this.#bot.api.getFile(fileId);
    if (!file.file_path) throw new Error("Telegram did not return a file path");
    const url = `${this.#o.apiRoot ?? "https://api.telegram.org"}/file/bot${this.#o.botToken}/${file.file_path}`;
    const res = await fetch(url);
    if (!res.ok) throw new Error(`Telegram file download failed with HTTP ${res.status}`);
    return Buffer.from(await res.arrayBuffer());
  }
}

// Error descriptions never include the token: grammY's errors carry the method, not the URL.
function describe(error: unknown): string {
  if (error instanceof GrammyError) return `${error.error_code} ${error.description}`;
  if (error instanceof HttpError)
    return `network error: ${String(error.error instanceof Error ? error.error.message : error.error)}`;
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
