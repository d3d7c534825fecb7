import {
  type AccountLease,
  type AdapterFields,
  type AdapterStateStore,
  accountConfigPath,
  type ChannelAdapter,
  type ChannelCapabilities,
  type ChannelPacing,
  ChannelRefusedError,
  type ChannelStatus,
  ChannelStatusCell,
  ChannelStoppedError,
  checkDeclaredSize,
  classifySendFailure,
  type FetchedMedia,
  type FetchMediaOptions,
  fetchMediaUrl,
  type HttpRoute,
  type HubLogger,
  type InboundHandler,
  type InboundResult,
  InboundSequencer,
  type Media,
  type OutboundSegment,
  type PacingLimits,
  pacingCapabilities,
  type ReplyTarget,
  resolvePacing,
  type SendResult,
  SingleHolder,
  sameSecret,
  untilStopped,
  webhookRoute,
} from "@hub/core";
import { Api, type ApiClientOptions, Bot, GrammyError } from "grammy";
import { Albums } from "./albums.js";
import { botApiFetch, type ClosableBotApiFetch } from "./bot-api-fetch.js";
import { classifyStartError, describeTelegramError, isHtmlParseError } from "./errors.js";
import { grammySignal } from "./grammy-signal.js";
import { deleteMessage, editText, setReaction } from "./live.js";
import { ALLOWED_UPDATES, type BotIdentity, normalizeMessage } from "./normalize.js";
import { type PollerDeps, pollUpdates } from "./polling.js";
import { plainTextFallback, telegramVisibleLength } from "./render.js";
import { MeasuredRenders } from "./rendered.js";
import { sendTelegramFile } from "./send-file.js";
import { parseUpdate } from "./update.js";
import { webhookProblems } from "./webhook-settings.js";

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
  /** `channels.telegram.pacing`: overrides of Telegram's send limits. */
  pacing?: ChannelPacing;
  /** Durable state (the polling offset survives restarts). */
  state: AdapterStateStore;
  logger: HubLogger;
  /** Long-poll timeout in seconds. */
  pollTimeoutSeconds?: number;
  /** Wait after a 409 Conflict before polling again (ms). */
  conflictBackoffMs?: number;
  /** Polling's lease: one hub process polls the bot at a time (none: this process always polls). */
  lease?: AccountLease;
}

const MAX_WEBHOOK_BYTES = 1024 * 1024;

/** Telegram's limits: about 1 message/s per chat, 20/min per group, 30/s per bot. */
const TELEGRAM_PACING: PacingLimits = { chatIntervalMs: 1000, groupIntervalMs: 3000, maxSendsPerSecond: 30 };

const chatIdParam = (chatId: string): number | string => (/^-?\d+$/.test(chatId) ? Number(chatId) : chatId);

/**
 * Telegram through grammY: long polling (default) or webhook in, paced and
 * formatted sends out. Every raw update is validated with zod at the edge
 * (grammY's middleware never sees inbound updates, so nothing in it can throw
 * on one); messages of one chat (and forum topic) are admitted in order by the
 * core's `InboundSequencer`, which also lets `/stop` skip the chat's queue.
 */
export class TelegramAdapter implements ChannelAdapter {
  readonly channel = "telegram";
  readonly capabilities: ChannelCapabilities;
  readonly #pacing: PacingLimits;
  readonly #o: TelegramAdapterOptions;
  readonly #bot: Bot;
  readonly #pollApi: Api;
  // The Bot API connections: the sends' pool and polling's one; closed when the adapter stops.
  readonly #sendFetch = botApiFetch();
  readonly #pollFetch = botApiFetch({ connections: 1 });
  readonly #log: HubLogger;
  /** The account this adapter serves (`default` for the single-account shorthand). */
  readonly accountId: string;
  #identity: BotIdentity | undefined;
  #onInbound: InboundHandler | undefined;
  #polling: Promise<void> | undefined;
  readonly #stop = new AbortController();
  readonly #sequencer = new InboundSequencer();
  readonly #albums = new Albums();
  /**
   * Basic groups upgraded to supergroups, as sends learned it (Telegram's 400 with `migrate_to_chat_id`): their
   * later sends, edits and typing go to the supergroup at once.
   */
  readonly #upgraded = new Map<string, number>();
  readonly #status: ChannelStatusCell;
  readonly #renders = new MeasuredRenders();

  constructor(options: TelegramAdapterOptions) {
    this.#o = options;
    this.#pacing = resolvePacing(TELEGRAM_PACING, options.pacing);
    this.capabilities = {
      textLimit: 4096,
      markdown: "telegram-html",
      threads: true,
      typing: true,
      edit: true,
      files: true,
      ...pacingCapabilities(this.#pacing),
      streamMinChars: 1500,
      measure: (markdown) => telegramVisibleLength(this.#renders.measure(markdown)),
    };
    this.accountId = options.accountId ?? "default";
    this.#log = options.logger.child({ channel: "telegram", accountId: this.accountId });
    const client = (fetch: ClosableBotApiFetch, timeoutSeconds: number): ApiClientOptions => ({
      apiRoot: options.apiRoot ?? "https://api.telegram.org",
      // A request that hangs (a black-holed network) fails and is retried instead of blocking forever.
      timeoutSeconds,
      fetch: fetch as unknown as ApiClientOptions["fetch"],
    });
    this.#bot = new Bot(options.botToken, { client: client(this.#sendFetch, 40) });
    // getUpdates on a connection of its own (see botApiFetch), given up 10 s after the poll's own timeout:
    // a poll that hangs past it would hold every chat's messages.
    this.#pollApi = new Api(options.botToken, client(this.#pollFetch, this.#pollTimeoutSeconds() + 10));
    this.#status = new ChannelStatusCell((status) => {
      if (status.state === "connected") this.#log.info("telegram connected");
    });
  }

  /** The grammY bot (for tests and advanced wiring). */
  get bot(): Bot {
    return this.#bot;
  }

  /** The connection state of this bot (connecting, connected, reconnecting with the next try, failed). */
  status(): ChannelStatus {
    return this.#status.get();
  }

  /**
   * One connection attempt: getMe, then the webhook or the polling loop. A
   * refused token throws `ChannelRefusedError` (failed, one clear line); a
   * network failure throws as is, and the hub retries with backoff. grammY's
   * `bot.init()` is not used: it retries network errors forever, in silence.
   */
  async start(onInbound: InboundHandler): Promise<void> {
    this.#onInbound = onInbound;
    this.#status.set("connecting");
    const at = accountConfigPath("telegram", this.accountId);
    let me: Awaited<ReturnType<Api["getMe"]>>;
    try {
      // A stop ends this call: a platform that never answers must not hold the hub's shutdown.
      me = await this.#bot.api.getMe(grammySignal(this.#stop.signal));
    } catch (error) {
      if (this.#stop.signal.aborted) throw new ChannelStoppedError();
      const classified = classifyStartError(error, at);
      if (classified instanceof ChannelRefusedError)
        this.#status.set("failed", { reason: classified.message });
      else this.#status.set("reconnecting", { reason: describeTelegramError(error) });
      throw classified;
    }
    this.#bot.botInfo = me;
    this.#identity = {
      id: me.id,
      username: me.username,
      readsAllGroupMessages: me.can_read_all_group_messages === true,
    };
    this.#log.info({ bot: me.username, mode: this.#o.mode ?? "polling" }, "telegram bot identified");
    if (this.#o.mode === "webhook") await this.#setWebhook(at);
    else if (this.#o.lease) {
      if (!(await untilStopped(this.#pollHolding(this.#o.lease), this.#stop.signal))) return;
    } else this.#polling = pollUpdates(this.#pollerDeps());
    this.#status.set("connected");
  }

  /**
   * Polls while this process holds the bot's lease, so two hub processes never
   * poll one bot (Telegram would answer 409 to one of them); waits, reporting
   * the holder, while another process polls, and takes over when it stops.
   * Resolves after the first try: true when this process polls now.
   */
  async #pollHolding(lease: AccountLease): Promise<boolean> {
    let firstTry: (held: boolean) => void = () => {};
    const tried = new Promise<boolean>((resolve) => (firstTry = resolve));
    const holder = new SingleHolder({
      lease,
      what: "this Telegram bot's polling",
      logger: this.#log,
      onWaiting: (reason, nextRetryAt, standby) => {
        this.#status.set("reconnecting", { reason, nextRetryAt, standby });
        firstTry(false);
      },
      onHeld: () => firstTry(true),
      onLost: (reason) =>
        this.#log.warn({ reason }, "telegram polling lease lost; this process stops polling"),
    });
    this.#polling = holder
      .run(this.#stop.signal, (held) =>
        pollUpdates({ ...this.#pollerDeps(), signal: held, leaseValid: () => holder.valid() }),
      )
      .catch((error) => this.#log.error({ err: describeTelegramError(error) }, "telegram polling stopped"));
    return tried;
  }

  async #setWebhook(at: string): Promise<void> {
    const [problem] = webhookProblems(this.#o, at);
    if (problem || !this.#o.webhookUrl || !this.#o.webhookSecret) {
      const reason =
        problem?.message ?? `Telegram webhook mode needs ${at}.webhookUrl and ${at}.webhookSecret.`;
      this.#status.set("failed", { reason });
      throw new ChannelRefusedError(problem?.code ?? "telegram_webhook_config", reason);
    }
    try {
      await this.#bot.api.setWebhook(
        this.#o.webhookUrl,
        {
          secret_token: this.#o.webhookSecret,
          allowed_updates: [...ALLOWED_UPDATES],
        },
        grammySignal(this.#stop.signal),
      );
    } catch (error) {
      if (this.#stop.signal.aborted) throw new ChannelStoppedError();
      // A 400 is Telegram refusing the URL or the secret: retrying the same settings cannot help, unless
      // it could not resolve the host yet (a DNS record still spreading).
      if (
        error instanceof GrammyError &&
        error.error_code === 400 &&
        !/resolve host/i.test(error.description)
      ) {
        const reason = `Telegram refused the webhook (${describeTelegramError(error)}); fix ${at}.webhookUrl (a public https:// URL) or ${at}.webhookSecret (A-Z, a-z, 0-9, _ and -) and restart the hub.`;
        this.#status.set("failed", { reason });
        throw new ChannelRefusedError("telegram_webhook_refused", reason, { cause: error });
      }
      this.#status.set("reconnecting", { reason: describeTelegramError(error) });
      throw classifyStartError(error, at);
    }
  }

  // The long poll's timeout: at most half the polling lease (see pollTimeoutWithin).
  #pollTimeoutSeconds(): number {
    return pollTimeoutWithin(this.#o.pollTimeoutSeconds ?? 25, this.#o.lease);
  }

  #pollerDeps(): PollerDeps {
    return {
      api: this.#pollApi,
      state: this.#o.state,
      stateKey: `telegram:${this.accountId}:offset`,
      handle: (raw) => this.handleRawUpdate(raw),
      status: this.#status,
      log: this.#log,
      signal: this.#stop.signal,
      pollTimeoutSeconds: this.#pollTimeoutSeconds(),
      conflictBackoffMs: this.#o.conflictBackoffMs ?? 30_000,
    };
  }

  /** Draining: polling ends and the bot's polling lease is let go, so a standby process polls now. */
  async pauseIntake(): Promise<void> {
    if (this.#o.mode === "webhook") return; // the gateway answers webhooks 503 while draining
    this.#stop.abort();
    await this.#polling;
    await this.#o.lease?.release().catch(() => undefined);
    this.#log.info("telegram polling handed over (the hub drains or stops); sends go on until the hub stops");
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#polling;
    await this.#o.lease?.close?.().catch(() => undefined);
    // Last: the hub stops its adapters once delivery has closed, so no send is left to make.
    await Promise.all([this.#sendFetch.close(), this.#pollFetch.close()]);
    this.#status.set("stopped");
  }

  /**
   * Handles one raw update (from polling or the webhook) and answers what the
   * platform must be told: only `retry` (a transient failure on our side) makes
   * it redeliver. Never throws; whatever can never be accepted is logged once
   * with its update_id and acknowledged.
   */
  async handleRawUpdate(raw: unknown): Promise<InboundResult> {
    const onInbound = this.#onInbound;
    const identity = this.#identity;
    if (!onInbound || !identity) return { kind: "retry", reason: "the adapter is not started" };
    let fields: AdapterFields;
    let updateId: number | undefined;
    let album: string | undefined;
    try {
      const update = parseUpdate(raw);
      updateId = update.updateId;
      if (!update.ok) return this.#dropped(update.updateId, update.reason, update.ignored === true);
      const normalized = normalizeMessage(update.message, update.kind, identity, {
        accountId: this.accountId,
        channelPosts: this.#o.channelPosts ?? false,
        editedMessages: this.#o.editedMessages ?? "ignore",
      });
      if ("skip" in normalized) return this.#dropped(update.updateId, normalized.skip, true);
      fields = normalized.fields;
      const group = update.message.media_group_id;
      if (group !== undefined && this.#o.mode !== "webhook") album = `${fields.chat.id}\u0000${group}`;
    } catch (error) {
      // The payload is what it is: whatever threw on it would throw on every redelivery.
      return this.#dropped(updateId, `unreadable update (${describeTelegramError(error)})`, false);
    }
    const admit = (whole: Promise<AdapterFields>) =>
      this.#sequencer.submit(fields, async () => onInbound(await whole));
    const result = await (album === undefined
      ? this.#sequencer.submit(fields, onInbound)
      : this.#albums.add(album, fields, admit)
    ).catch((error): InboundResult => ({ kind: "retry", reason: describeTelegramError(error) }));
    if (result.kind === "rejected")
      this.#log.warn({ updateId, reason: result.reason }, "telegram message rejected; dropped");
    if (result.kind === "retry")
      this.#log.warn({ updateId, reason: result.reason }, "telegram message not accepted now");
    return result;
  }

  #dropped(updateId: number | undefined, reason: string, ignored: boolean): InboundResult {
    if (ignored) {
      this.#log.debug({ updateId, reason }, "telegram update not for us");
      return { kind: "ignored", reason };
    }
    this.#log.warn({ updateId, reason }, "dropping a malformed Telegram update");
    return { kind: "rejected", reason };
  }

  /** The webhook endpoint, mounted on the gateway's HTTP server (2xx for anything but our transient failures). */
  httpRoutes(): HttpRoute[] {
    if (this.#o.mode !== "webhook") return [];
    const secret = this.#o.webhookSecret;
    return [
      webhookRoute({
        path: new URL(this.#o.webhookUrl ?? "http://localhost/telegram/webhook").pathname,
        maxBytes: MAX_WEBHOOK_BYTES,
        // The secret is a header: a caller without it is refused before its body is read.
        verifyHeaders: (req) => {
          const header = req.headers["x-telegram-bot-api-secret-token"];
          const given = Array.isArray(header) ? header[0] : header;
          return given !== undefined && secret !== undefined && sameSecret(given, secret);
        },
        verify: () => true,
        handle: (body) => this.handleRawUpdate(body),
        // Redis down or frozen: 503 within 10 s (Telegram redelivers), not a call held open until it is back.
        answerWithinMs: WEBHOOK_ANSWER_WITHIN_MS,
        logger: this.#log,
      }),
    ];
  }

  sendIntervalMs(target: ReplyTarget): number {
    // Negative chat ids are groups.
    return target.chatId.startsWith("-") ? this.#pacing.groupIntervalMs : this.#pacing.chatIntervalMs;
  }

  async send(
    segment: OutboundSegment,
    target: ReplyTarget,
    options: { signal?: AbortSignal } = {},
  ): Promise<SendResult> {
    const known = this.#upgraded.get(target.chatId);
    try {
      if (known !== undefined)
        return await this.#sendTo(known, segment, upgradedTarget(target, known), options.signal);
      return await this.#sendTo(chatIdParam(target.chatId), segment, target, options.signal);
    } catch (error) {
      const movedTo = error instanceof GrammyError ? error.parameters.migrate_to_chat_id : undefined;
      if (movedTo === undefined || known !== undefined) throw this.#classify(error);
      this.#upgraded.set(target.chatId, movedTo);
      this.#log.info(
        { chatId: target.chatId, movedTo },
        "telegram group upgraded to a supergroup; answering there",
      );
      try {
        return await this.#sendTo(movedTo, segment, upgradedTarget(target, movedTo), options.signal);
      } catch (again) {
        throw this.#classify(again);
      }
    }
  }

  // The chat to write to for `target`: the supergroup its group was upgraded to, once a send learned it.
  #chatOf(target: ReplyTarget): number | string {
    return this.#upgraded.get(target.chatId) ?? chatIdParam(target.chatId);
  }

  async #sendTo(
    chatId: number | string,
    segment: OutboundSegment,
    target: ReplyTarget,
    abort: AbortSignal | undefined,
  ): Promise<SendResult> {
    const signal = grammySignal(abort);
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
    if (segment.attachment) {
      const sent = await sendTelegramFile(
        this.#bot.api,
        chatId,
        segment.text,
        segment.attachment,
        common,
        abort,
      );
      return { messageId: String(sent.message_id) };
    }
    try {
      const sent = await this.#bot.api.sendMessage(
        chatId,
        this.#renders.take(segment.text),
        { ...common, parse_mode: "HTML" },
        signal,
      );
      return { messageId: String(sent.message_id) };
    } catch (error) {
      if (!isHtmlParseError(error)) throw error;
      this.#log.warn(
        { replyId: segment.replyId, index: segment.index },
        "telegram could not parse our HTML; resending as plain text",
      );
      const sent = await this.#bot.api.sendMessage(chatId, plainTextFallback(segment.text), common, signal);
      return { messageId: String(sent.message_id) };
    }
  }

  // 429 waits out retry_after; a 4xx (blocked, chat not found, bad request) fails the segment for good.
  #classify(error: unknown): unknown {
    if (!(error instanceof GrammyError)) return error;
    return classifySendFailure(
      {
        platform: "Telegram",
        status: error.error_code,
        retryAfter: error.parameters.retry_after,
        description: error.description,
        // A 400 that refuses the chat itself: a note in a message's place would be refused the same way.
        chatRefuses: /chat not found|group chat was (?:deactivated|upgraded)|have no rights to send/i.test(
          error.description,
        ),
      },
      error,
    );
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    await this.#bot.api.sendChatAction(
      this.#chatOf(target),
      "typing",
      target.threadId ? { message_thread_id: Number(target.threadId) } : {},
    );
  }

  /** Edits a message the bot sent (a live preview) into `segment`. */
  async edit(
    messageId: string,
    segment: OutboundSegment,
    target: ReplyTarget,
    options: { signal?: AbortSignal } = {},
  ): Promise<void> {
    try {
      await editText(this.#bot.api, this.#chatOf(target), messageId, segment, options.signal);
    } catch (error) {
      throw this.#classify(error);
    }
  }

  /** Deletes a message the bot sent (an abandoned live preview). */
  async deleteMessage(target: ReplyTarget, messageId: string): Promise<void> {
    try {
      await deleteMessage(this.#bot.api, this.#chatOf(target), messageId);
    } catch (error) {
      throw this.#classify(error);
    }
  }

  /** Sets or clears the bot's reaction on a message (setMessageReaction). */
  async react(target: ReplyTarget, messageId: string, emoji: string | null): Promise<void> {
    await setReaction(this.#bot.api, this.#chatOf(target), messageId, emoji);
  }

  /**
   * Downloads an attachment (`Media.ref` is the file_id): `getFile` names its
   * path, then `<apiRoot>/file/bot<token>/<path>` serves it (valid for an hour).
   */
  async fetchMedia(media: Media, options: FetchMediaOptions): Promise<FetchedMedia> {
    checkDeclaredSize(media.size, options.maxBytes);
    const signal = grammySignal(options.signal);
    const file = await this.#bot.api.getFile(media.ref, signal);
    if (!file.file_path) throw new Error("Telegram did not return a file path");
    const url = `${this.#o.apiRoot ?? "https://api.telegram.org"}/file/bot${this.#o.botToken}/${file.file_path}`;
    return fetchMediaUrl(url, { ...options, platform: "Telegram", declaredSize: file.file_size });
  }
}

/** The longest a webhook call from Telegram waits for its update to be taken (see `answerWithinMs`). */
const WEBHOOK_ANSWER_WITHIN_MS = 10_000;

/**
 * A long poll that outlives the polling lease would still be open at Telegram when a process frozen
 * mid-poll has lost the lease and another polls: Telegram ends the old poll with a 409. So a poll lasts
 * at most half the lease (at least 1 s).
 */
export function pollTimeoutWithin(seconds: number, lease: Pick<AccountLease, "ttlMs"> | undefined): number {
  if (!lease) return seconds;
  return Math.min(seconds, Math.max(1, Math.floor(lease.ttlMs / 2000)));
}

/**
 * Where an answer to an upgraded group goes: the supergroup, as no reply (the message it answered has another
 * id there, if any) and in no topic (a basic group has none).
 */
function upgradedTarget(target: ReplyTarget, supergroup: number): ReplyTarget {
  return { channel: target.channel, accountId: target.accountId, chatId: String(supergroup) };
}
