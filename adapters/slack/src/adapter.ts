import { AsyncLocalStorage } from "node:async_hooks";
import { join } from "node:path";
import {
  AckJournal,
  type AdapterStateStore,
  accountConfigPath,
  type ChannelAdapter,
  type ChannelCapabilities,
  type ChannelPacing,
  ChannelRefusedError,
  type ChannelStatus,
  ChannelStatusCell,
  ChannelStoppedError,
  describeError,
  type FetchedMedia,
  type FetchMediaOptions,
  type HttpRoute,
  type HubLogger,
  type InboundHandler,
  keyOrVariable,
  linkedSignal,
  type Media,
  type OutboundSegment,
  OwnReactions,
  type PacingLimits,
  pacingCapabilities,
  type ReplyTarget,
  resolvePacing,
  type SendResult,
  untilStopped,
} from "@hub/core";
import { App, type Receiver } from "@slack/bolt";
import type { WebClientOptions } from "@slack/web-api";
import { boltLogger } from "./bolt-logger.js";
import { missingModeKey, SLACK_API_URL } from "./config.js";
import { SlackDirectory } from "./directory.js";
import {
  admitJournaled,
  type EventsRouteOptions,
  type SlackEnvelope,
  SlackEnvelopeSchema,
  slackEventsRoute,
} from "./events-http.js";
import { fetchSlackFile } from "./files.js";
import { SlackInbound } from "./inbound.js";
import { deletePost, reactionName, setReaction, updateText } from "./live.js";
import type { SlackBotIdentity } from "./normalize.js";
import { classifySlackError, refusedTokenCode, SlackPoster } from "./poster.js";
import { renderMrkdwn, SLACK_TEXT_LIMIT } from "./render.js";
import { SocketConnection } from "./socket.js";
import { classifyStartError, isRefusedSocketStartLine } from "./start-errors.js";
import { WorkingIndicator } from "./working.js";

/** Options of the Slack adapter (from `channels.slack` plus wiring). */
export interface SlackAdapterOptions {
  botToken: string;
  mode?: "http" | "socket";
  signingSecret?: string | undefined;
  appToken?: string | undefined;
  apiUrl?: string;
  eventsPath?: string;
  accountId?: string;
  editedMessages?: "ignore" | "as-new";
  /** `channels.slack.pacing`: overrides of Slack's send limits. */
  pacing?: ChannelPacing;
  state: AdapterStateStore;
  logger: HubLogger;
  /**
   * The hub's state directory: events acknowledged before their admission finished are journaled under
   * `slack/<accountId>/acked/` until admitted (without it, a crash in that window loses them).
   */
  stateDir?: string;
  /** Wait after an uncertain post before looking for it (ms); Slack finishes a request well within it. */
  uncertainSettleMs?: number;
  /** The working indicator goes away this long after the last typing refresh (ms). */
  workingIdleMs?: number;
  /** Acknowledge an HTTP event after this long even if admission is still running (ms). */
  ackDeadlineMs?: number;
  /** How an HTTP event whose admission failed after its ack is tried again (see `EventsRouteOptions`). */
  lateRetry?: EventsRouteOptions["lateRetry"];
}

/**
 * Slack's send limits: chat.postMessage takes about one message per second per channel (short bursts
 * pass), and the hub keeps a workspace's sends to 20 per second.
 */
const SLACK_PACING: PacingLimits = { chatIntervalMs: 1000, groupIntervalMs: 1000, maxSendsPerSecond: 20 };

/** How many answered threads a process remembers (follow-ups there need no mention). */
const BOT_THREADS_MAX = 10_000;

// The Web API client types fetch with its own Response shape; the runtime's fetch satisfies it.
type SlackFetch = NonNullable<WebClientOptions["fetch"]>;

/**
 * Bolt needs a receiver; ours listens to nothing: events reach `app.processEvent` from the hub's
 * own route (HTTP) or our Socket Mode connection, so we decide when Slack is acknowledged.
 */
class HubReceiver implements Receiver {
  init(): void {}
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
}

/**
 * Slack through Bolt 5: the Events API on the hub's own HTTP server (signed, acknowledged after
 * admission or within 3 s) or Socket Mode in; mrkdwn sends out, never retried by the SDK and never
 * posted twice after an uncertain attempt. `app_mention` and the `message` Slack sends with it are
 * one message (same channel + ts), and concurrent deliveries of one message are handled one after
 * the other, so the second is a plain duplicate.
 */
export class SlackAdapter implements ChannelAdapter {
  readonly channel = "slack";
  readonly accountId: string;
  readonly capabilities: ChannelCapabilities;
  readonly #o: SlackAdapterOptions;
  readonly #log: HubLogger;
  readonly #app: App;
  readonly #receiver = new HubReceiver();
  readonly #signals = new AsyncLocalStorage<AbortSignal>();
  readonly #poster: SlackPoster;
  readonly #working: WorkingIndicator;
  /** The reaction this process set on each message, so removing it knows the emoji. */
  readonly #reactions = new OwnReactions<{ target: ReplyTarget; messageId: string }>((at, emoji, on) =>
    setReaction(this.#app.client, at.target, at.messageId, reactionName(emoji), on),
  );
  readonly #inbound: SlackInbound;
  /** Channel threads this process has answered in (`channel:thread_ts`), newest last, bounded. */
  readonly #botThreads = new Set<string>();
  #socket: SocketConnection | undefined;
  #identity: SlackBotIdentity | undefined;
  #appReady = false;
  // The reason the channel turned failed when Slack refused the bot token at runtime (see #watchingToken).
  #tokenRefusal: string | undefined;
  /** Aborted by `stop`: a start still connecting gives up at once. */
  #stopping = new AbortController();
  readonly #status: ChannelStatusCell;
  /** Early-acknowledged events until admitted (HTTP mode with a state directory). */
  readonly #journal: AckJournal<SlackEnvelope> | undefined;
  /** Looks for journals other processes left behind (see `#adoptJournaled`). */
  #adopting: NodeJS.Timeout | undefined;

  constructor(options: SlackAdapterOptions) {
    this.#o = options;
    this.accountId = options.accountId ?? "default";
    this.capabilities = slackCapabilities(options.pacing);
    this.#log = options.logger.child({ channel: "slack", accountId: this.accountId });
    // A failed start is said by whoever catches its error (the hub's supervisor), so only the
    // socket's own changes after it are logged here (see #connectSocket).
    this.#status = new ChannelStatusCell((status) => {
      if (status.state === "connected") this.#log.info("slack connected");
    });
    const logger = boltLogger(this.#log);
    this.#app = new App({
      token: options.botToken,
      receiver: this.#receiver,
      deferInitialization: true,
      logger,
      clientOptions: {
        slackApiUrl: options.apiUrl ?? SLACK_API_URL,
        // Never a double post: the client does not retry (the ReplyDispatcher does, with its checkpoint),
        // and a 429 is thrown at once so the whole reply target waits Retry-After.
        retryConfig: { retries: 0 },
        rejectRateLimitedCalls: true,
        // A safety net for calls without a deadline of their own (sends are aborted earlier by their signal).
        timeout: 30_000,
        fetch: ((input: string | URL, init?: RequestInit) =>
          fetch(input, { ...init, signal: this.#withSendSignal(init?.signal) })) as unknown as SlackFetch,
      },
    });
    this.#app.error(async (error) => {
      throw (error as { original?: unknown }).original ?? error;
    });
    const client = this.#app.client;
    this.#poster = new SlackPoster({
      client,
      state: options.state,
      accountId: this.accountId,
      logger: this.#log,
      botUserId: () => this.#identity?.userId,
      settleMs: options.uncertainSettleMs ?? 15_000,
    });
    this.#working = new WorkingIndicator({
      client,
      logger: this.#log,
      idleMs: options.workingIdleMs ?? 8000,
    });
    this.#journal = ackJournalFor(options, this.accountId, this.#log);
    this.#inbound = new SlackInbound({
      app: this.#app,
      logger: this.#log,
      directory: new SlackDirectory(client, this.#log),
      accountId: this.accountId,
      editedMessages: options.editedMessages ?? "ignore",
      identity: () => this.#identity,
      isBotThread: (channel, ts) => this.#botThreads.has(`${channel}:${ts}`),
    });
  }

  /** The Bolt app (for tests and advanced wiring). */
  get app(): App {
    return this.#app;
  }

  /** The bot's identity in the workspace, once started. */
  get identity(): SlackBotIdentity | undefined {
    return this.#identity;
  }

  status(): ChannelStatus {
    return this.#status.get();
  }

  // The abort signal of the send in progress (if any) reaches the HTTP request Bolt's client makes.
  #withSendSignal(own: AbortSignal | null | undefined): AbortSignal | undefined {
    const send = this.#signals.getStore();
    const signals = [own, send].filter((s): s is AbortSignal => s instanceof AbortSignal);
    // Linked, not AbortSignal.any: Node 20 may collect that one mid-request, and an abort then never lands.
    return signals.length <= 1 ? signals[0] : linkedSignal(signals).signal;
  }

  /**
   * One connection attempt: check the config, `auth.test` (who the bot is), then Socket Mode's
   * connection if configured. A refused token or a missing key throws `ChannelRefusedError`
   * (failed, one clear line); anything else (Slack unreachable) throws as is and the hub retries.
   */
  async start(onInbound: InboundHandler): Promise<void> {
    this.#status.set("connecting");
    const mode = this.#o.mode ?? "http";
    const at = accountConfigPath("slack", this.accountId);
    const missing = missingModeKey(this.#o, at);
    if (missing) this.#refuse(new ChannelRefusedError("slack_config", missing));
    this.#stopping = new AbortController();
    const stopped = this.#stopping.signal;
    try {
      // The signal also reaches the HTTP requests (see #withSendSignal), so a stop closes them.
      await untilStopped(
        this.#signals.run(stopped, () => this.#identify(at)),
        stopped,
      );
      this.#inbound.setHandler(onInbound);
      if (mode === "socket") await this.#connectSocket(at, stopped);
      else {
        this.#status.set("connected");
        this.#adoptJournaled();
      }
    } catch (error) {
      if (error instanceof ChannelStoppedError) throw error;
      if (error instanceof ChannelRefusedError) this.#refuse(error);
      this.#status.set("reconnecting", { reason: describeError(error) });
      throw error;
    }
  }

  /**
   * Runs a Web API call, and turns the channel `failed` when Slack refuses the bot token itself (revoked, the
   * app uninstalled, the workspace gone): every later call would be refused too, and without this the
   * channel said `connected` while its answers failed one by one. A call Slack takes again (a token
   * restored) makes it `connected` again.
   */
  async #watchingToken<T>(call: () => Promise<T>): Promise<T> {
    try {
      const result = await call();
      if (this.#tokenRefusal !== undefined && this.#status.get().reason === this.#tokenRefusal)
        this.#status.set("connected");
      return result;
    } catch (error) {
      const code = refusedTokenCode(error);
      if (code && this.#status.get().state === "connected") {
        this.#tokenRefusal = `Slack refused the bot token (${code}); put a valid one in ${keyOrVariable(accountConfigPath("slack", this.accountId), "botToken", "SLACK_BOT_TOKEN")} and restart the hub`;
        this.#status.set("failed", { reason: this.#tokenRefusal });
        this.#log.error({ code }, this.#tokenRefusal);
      }
      throw error;
    }
  }

  #refuse(error: ChannelRefusedError): never {
    this.#status.set("failed", { reason: error.message });
    throw error;
  }

  async #identify(at: string): Promise<void> {
    try {
      if (!this.#appReady) await this.#app.init();
      this.#appReady = true;
      const auth = await this.#app.client.auth.test();
      if (!auth.user_id) throw new Error("auth.test returned no user_id");
      this.#identity = {
        userId: auth.user_id,
        botId: auth.bot_id,
        teamId: auth.team_id,
        enterpriseId: auth.enterprise_id,
      };
    } catch (error) {
      throw classifyStartError(
        error,
        `Slack refused the bot token; check ${keyOrVariable(at, "botToken", "SLACK_BOT_TOKEN")}, the xoxb- token`,
      );
    }
    this.#log.info(
      { botUserId: this.#identity.userId, mode: this.#o.mode ?? "http" },
      "slack bot identified",
    );
  }

  async #connectSocket(at: string, stopped: AbortSignal): Promise<void> {
    await this.#socket?.stop();
    // Stopped while the old socket closed: stop() saw that one; a new one would stay open.
    if (stopped.aborted) throw new ChannelStoppedError();
    this.#socket = new SocketConnection({
      appToken: this.#o.appToken ?? "",
      apiUrl: this.#o.apiUrl ?? SLACK_API_URL,
      logger: this.#log,
      boltLogger: boltLogger(this.#log, isRefusedSocketStartLine),
      process: (envelope) => this.#inbound.process(envelope),
      onState: (state, reason) => {
        const before = this.#status.get();
        this.#status.set(state, reason ? { reason } : {});
        // Said when it changes (each failed try has its own line: see SocketConnection's onReconnectFailed).
        if (state === "reconnecting" && (before.state !== state || before.reason !== reason))
          this.#log.warn({ state, reason }, "slack connection state changed");
      },
    });
    try {
      await untilStopped(this.#socket.start(), stopped);
    } catch (error) {
      if (error instanceof ChannelStoppedError) throw error;
      throw classifyStartError(
        error,
        `Slack refused the app-level token; check ${keyOrVariable(at, "appToken", "SLACK_APP_TOKEN")}, the xapp- token with connections:write`,
      );
    }
  }

  // Events another process acknowledged early and never admitted (it died): at start, and every minute
  // for the journals of processes this one cannot tell are gone (another container: see ORPHAN_IDLE_MS).
  #adoptJournaled(): void {
    const journal = this.#journal;
    if (!journal || this.#adopting) return;
    const adopt = () => {
      try {
        admitJournaled(this.#eventsOptions(), journal.adoptOrphans());
      } catch (error) {
        this.#log.warn({ err: describeError(error) }, "slack: journaled early-acknowledged events not read");
      }
    };
    adopt();
    this.#adopting = setInterval(adopt, 60_000).unref();
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    clearInterval(this.#adopting);
    this.#adopting = undefined;
    await this.#socket?.stop();
    this.#inbound.setHandler(undefined);
    await this.#inbound.drain();
    this.#journal?.stop();
    await this.#working.clearAll();
    this.#status.set("stopped");
  }

  /** The Events API endpoint on the hub's HTTP server (HTTP mode). */
  httpRoutes(): HttpRoute[] {
    if ((this.#o.mode ?? "http") !== "http" || !this.#o.signingSecret) return [];
    return [slackEventsRoute(this.#eventsOptions())];
  }

  #eventsOptions(): EventsRouteOptions {
    const adapter = this;
    return {
      // Read at each use: every start makes a new one, and the routes are made before the first.
      get stopped() {
        return adapter.#stopping.signal;
      },
      path: this.#o.eventsPath ?? "/slack/events",
      signingSecret: this.#o.signingSecret ?? "",
      logger: this.#log,
      process: (envelope) => this.#inbound.process(envelope),
      ...(this.#o.ackDeadlineMs ? { ackDeadlineMs: this.#o.ackDeadlineMs } : {}),
      ...(this.#o.lateRetry ? { lateRetry: this.#o.lateRetry } : {}),
      ...(this.#journal ? { journal: this.#journal } : {}),
    };
  }

  async send(
    segment: OutboundSegment,
    target: ReplyTarget,
    options: { signal?: AbortSignal } = {},
  ): Promise<SendResult> {
    // In a channel the answer goes to a thread on the user's message; in a DM it stays in the DM.
    const threadTs = target.threadId ?? (target.chatId.startsWith("D") ? undefined : target.replyToMessageId);
    const post = () =>
      this.#poster.post({
        channel: target.chatId,
        threadTs,
        text: renderMrkdwn(segment.text),
        replyId: segment.replyId,
        index: segment.index,
        file: segment.attachment,
      });
    const ts = await this.#watchingToken(() =>
      options.signal ? this.#signals.run(options.signal, post) : post(),
    );
    if (threadTs && !target.chatId.startsWith("D")) this.#rememberThread(`${target.chatId}:${threadTs}`);
    return { messageId: ts };
  }

  #rememberThread(key: string): void {
    this.#botThreads.delete(key);
    this.#botThreads.add(key);
    if (this.#botThreads.size > BOT_THREADS_MAX) {
      this.#botThreads.delete(this.#botThreads.values().next().value as string);
    }
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    await this.#working.refresh(target);
  }

  /** Downloads a shared file from `url_private_download` with the bot token (see files.ts). */
  async fetchMedia(media: Media, options: FetchMediaOptions): Promise<FetchedMedia> {
    return fetchSlackFile(media, {
      ...options,
      botToken: this.#o.botToken,
      apiUrl: this.#o.apiUrl ?? SLACK_API_URL,
    });
  }

  /** Edits a message the bot posted (a live preview) into `segment` (chat.update). */
  async edit(
    messageId: string,
    segment: OutboundSegment,
    target: ReplyTarget,
    options: { signal?: AbortSignal } = {},
  ): Promise<void> {
    const update = () => updateText(this.#app.client, target, messageId, renderMrkdwn(segment.text));
    try {
      await this.#watchingToken(() =>
        options.signal ? this.#signals.run(options.signal, update) : update(),
      );
    } catch (error) {
      throw classifySlackError(error);
    }
  }

  /** Deletes a message the bot posted (an abandoned live preview; chat.delete). */
  async deleteMessage(target: ReplyTarget, messageId: string): Promise<void> {
    try {
      await this.#watchingToken(() => deletePost(this.#app.client, target, messageId));
    } catch (error) {
      throw classifySlackError(error);
    }
  }

  /** Sets or removes the bot's reaction (reactions.add/remove; emoji as a character or a Slack name). */
  async react(
    target: ReplyTarget,
    messageId: string,
    emoji: string | null,
    previous?: string,
  ): Promise<void> {
    await this.#reactions.react(`${target.chatId}/${messageId}`, { target, messageId }, emoji, previous);
  }
}

/** What a Slack account can do, with its pacing (`channels.slack.pacing` over Slack's limits). */
function slackCapabilities(pacing: ChannelPacing | undefined): ChannelCapabilities {
  return {
    textLimit: SLACK_TEXT_LIMIT,
    markdown: "slack-mrkdwn",
    threads: true,
    typing: true,
    edit: true,
    files: true,
    ...pacingCapabilities(resolvePacing(SLACK_PACING, pacing)),
    streamMinChars: 1500,
    measure: (markdown) => renderMrkdwn(markdown).length,
  };
}

/** Where an HTTP-mode account journals early-acknowledged events (none without a state directory). */
function ackJournalFor(
  options: SlackAdapterOptions,
  accountId: string,
  log: HubLogger,
): AckJournal<SlackEnvelope> | undefined {
  if (!options.stateDir || (options.mode ?? "http") !== "http") return undefined;
  return new AckJournal(
    join(options.stateDir, "slack", accountId, "acked"),
    SlackEnvelopeSchema,
    log,
    "slack",
  );
}
