import { setMaxListeners } from "node:events";
import {
  type AccountLease,
  type AdapterFields,
  type AdapterStateStore,
  accountConfigPath,
  Backoff,
  type ChannelAdapter,
  type ChannelCapabilities,
  type ChannelPacing,
  ChannelRefusedError,
  type ChannelStatus,
  ChannelStoppedError,
  type FetchedMedia,
  type FetchMediaOptions,
  fetchMediaUrl,
  formatIssues,
  HubError,
  type HubLogger,
  type InboundHandler,
  type InboundResult,
  InboundSequencer,
  identifyingFields,
  isPermanentStatus,
  KeyedChain,
  keyOrVariable,
  type Media,
  type OutboundSegment,
  OwnReactions,
  type PacingLimits,
  PermanentSendError,
  pacingCapabilities,
  RateLimitedError,
  type ReplyTarget,
  resolvePacing,
  type SendResult,
  SingleHolder,
  sleep,
  waitAtMost,
} from "@hub/core";
import {
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  HTTPError,
  Partials,
  type RateLimitData,
  RateLimitError,
  Routes,
} from "discord.js";
import {
  CATCH_UP_BUDGET_MS,
  CATCH_UP_WINDOW_MS,
  ChannelMarks,
  channelsToRead,
  MAX_CHANNELS,
  missedMessages,
  snowflakeAt,
} from "./catch-up.js";
import { describeClose } from "./close-reasons.js";
import { type DiscordGuild, guildAccess } from "./config.js";
import { frameProblemOf, guardGatewayFrames } from "./frame-guard.js";
import { GatewayStatus } from "./gateway-status.js";
import { type InteractionRecord, InteractionReplies } from "./interaction-replies.js";
import { deleteMessage, editMessage, setOwnReaction } from "./live.js";
import {
  type DiscordBotIdentity,
  type DiscordMessage,
  DiscordMessageSchema,
  normalizeMessage,
  UNKNOWN_THREAD_PARENT,
} from "./normalize.js";
import { channelOf, INTERACTION_PREFIX, measureWithLines, messageBody } from "./outbound.js";
import { guardPacketHandlers } from "./packet-guard.js";
import { fileMessageRequest } from "./send-file.js";
import { SessionChannels } from "./session-channels.js";
import {
  type CommandInteraction,
  CommandInteractionSchema,
  interactionFields,
  SLASH_COMMANDS,
  unknownCommandAnswer,
} from "./slash-commands.js";

/**
 * Discord's send limits: a channel (a DM alike) takes about 5 messages per 5 s, and a bot about
 * 50 requests per second in all, of which the sends get 40.
 */
const DISCORD_PACING: PacingLimits = { chatIntervalMs: 1000, groupIntervalMs: 1000, maxSendsPerSecond: 40 };

/** Options of the Discord adapter (from `channels.discord` plus wiring). */
export interface DiscordAdapterOptions {
  token: string;
  /** Discord's REST API root (`https://discord.com/api`); the gateway URL comes from its `/gateway/bot`. */
  restApi?: string;
  accountId?: string;
  guilds?: Record<string, DiscordGuild>;
  textLimit?: number;
  maxLinesPerMessage?: number;
  slashCommands?: boolean;
  /** `channels.discord.pacing`: overrides of Discord's send limits. */
  pacing?: ChannelPacing;
  /** Durable state shared by the hub's processes (interaction tokens for the delivery role). */
  state: AdapterStateStore;
  logger: HubLogger;
  /** Longest `start()` waits for the gateway to get ready before it gives up (and is tried again). */
  startWaitMs?: number;
  /** First wait before retrying a message the hub could not accept (doubles, up to 30 s). */
  inboundRetryMs?: number;
  /** The gateway connection's lease: one hub process holds it at a time (none: this process always connects). */
  lease?: AccountLease;
  /** Backoff between gateway connection attempts while holding the lease (default 1 s doubling to 60 s). */
  reconnect?: { initialMs: number; maxMs: number };
}

const INBOUND_ATTEMPTS = 8;
/** How long after a command the hub did not take the adapter checks whether anything answered it. */
const UNANSWERED_CHECK_MS = 3000;
const STOP_WAIT_MS = 2000;

/**
 * Discord through discord.js 14: the gateway (guild messages, DMs, threads,
 * slash commands) in, REST sends out. Every send carries a nonce derived from
 * the segment with `enforce_nonce`, so a resend never posts twice; mentions
 * never ping; 429s become `RateLimitedError` so the reply target waits.
 */
export class DiscordAdapter implements ChannelAdapter {
  readonly channel = "discord";
  readonly capabilities: ChannelCapabilities;
  readonly accountId: string;
  readonly #o: DiscordAdapterOptions;
  readonly #log: HubLogger;
  readonly #status: GatewayStatus;
  #client: Client;
  readonly #chains = new KeyedChain();
  readonly #sequencer = new InboundSequencer();
  readonly #pending = new Set<Promise<unknown>>();
  #stopSignal = new AbortController();
  readonly #replies: InteractionReplies;
  /** The reaction this process set on each message, so removing it knows the emoji. */
  readonly #reactions = new OwnReactions<{ target: ReplyTarget; messageId: string }>((at, emoji, on) =>
    setOwnReaction(this.#client.rest, at.target, at.messageId, emoji, on),
  );
  #onInbound: InboundHandler | undefined;
  #login: Promise<string> | undefined;
  #stopped = false;
  /** The last connection attempt failed: the next one keeps the status "reconnecting". */
  #retrying = false;
  /** The lease loop (with a lease): connects while this process holds the gateway. */
  #holding: Promise<void> | undefined;
  /** Where each channel's messages were last handed to the hub (read back from after a fresh READY). */
  readonly #marks: ChannelMarks;
  /** Per channel, the last pending move of its read-back mark (marks move in the channel's order). */
  readonly #markTails = new Map<string, Promise<void>>();
  /** The read-back after the latest READY: live messages wait for it (bounded), so they come after. */
  #caughtUp: Promise<void> = Promise.resolve();
  /** What the current gateway session's guild creates said of their channels' newest messages. */
  #session = new SessionChannels();

  constructor(options: DiscordAdapterOptions) {
    this.#o = options;
    this.accountId = options.accountId ?? "default";
    this.#log = options.logger.child({ channel: "discord", accountId: this.accountId });
    this.#status = new GatewayStatus(this.#log);
    const textLimit = Math.min(options.textLimit ?? 2000, 2000);
    this.capabilities = {
      textLimit,
      markdown: "discord",
      threads: true,
      typing: true,
      edit: true,
      files: true,
      ...pacingCapabilities(resolvePacing(DISCORD_PACING, options.pacing)),
      streamMinChars: 1200,
      // A gateway event is sent once: a message the hub did not take is never delivered again.
      redelivers: false,
      measure: measureWithLines(textLimit, options.maxLinesPerMessage ?? 17),
    };
    this.#client = this.#createClient();
    this.#replies = new InteractionReplies(() => this.#client.rest, options.state, this.accountId);
    this.#marks = new ChannelMarks(options.state, this.accountId);
  }

  #createClient(): Client {
    const client = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.MessageContent,
        GatewayIntentBits.DirectMessages,
      ],
      // DM channels are not cached before their first message; without this DMs are never seen.
      partials: [Partials.Channel],
      rest: {
        api: this.#o.restApi ?? "https://discord.com/api",
        // The hub's delivery retries (with the same nonce); discord.js retrying too would hide failures.
        retries: 0,
        // A 429 on a send goes back to the hub, which holds the whole reply target (order kept).
        rejectOnRateLimit: (data: RateLimitData) => /^\/(channels|webhooks|interactions)\//.test(data.route),
      },
      allowedMentions: { parse: [], repliedUser: false },
      enforceNonce: true,
      failIfNotExists: false,
    });
    // A process that only delivers never logs in, but its sends need the token too. @discordjs/rest drops it
    // on any authenticated 401 (a typing call or a reaction too), and every later call would then fail without
    // one ("Expected token to be set") while the channel showed connected: it is kept, the refusal shown instead.
    const rest = client.rest;
    const setToken = rest.setToken.bind(rest);
    rest.setToken = (token) => setToken(token ?? this.#o.token);
    rest.setToken(this.#o.token);
    guardGatewayFrames();
    guardPacketHandlers(client, this.#log);
    this.#wire(client);
    return client;
  }

  /** The discord.js client (for tests and advanced wiring). */
  get client(): Client {
    return this.#client;
  }

  status(): ChannelStatus {
    return this.#status.current;
  }

  #wire(c: Client): void {
    // A client let go after losing the lease says nothing more about this account's state.
    const current = () => c === this.#client;
    c.on(Events.ShardReady, () => current() && this.#status.ready());
    c.on(Events.ShardResume, (_id, replayed) => {
      this.#log.info({ replayed }, "discord gateway resumed");
      if (current()) this.#status.ready();
    });
    c.on(Events.ShardReconnecting, () => {
      if (!this.#stopped && current()) this.#status.reconnecting();
    });
    // While a login is awaited, its failure is thrown and said once by whoever awaits it (the refusal, or
    // the retry): the shard's own close and error would say it twice more.
    c.on(
      Events.ShardDisconnect,
      (event) => current() && !this.#login && this.#status.disconnected(event.code),
    );
    c.on(Events.ShardError, (error) => {
      if (!this.#login) this.#log.warn({ err: error.message }, "discord gateway error");
    });
    c.on(Events.Error, (error) => this.#log.error({ err: error.message }, "discord client error"));
    c.on(Events.Debug, (message) => {
      const problem = frameProblemOf(message);
      if (problem) this.#log.warn({ problem }, "Discord sent a gateway frame the bot cannot use as it is");
      if (current()) this.#status.debug(message);
    });
    c.on(Events.ClientReady, () => void this.#registerCommands());
    c.on(Events.Raw, (packet: { t?: string | null; d?: unknown }) => {
      try {
        // A fresh session (not a RESUME, which replays): read back what was written while none was up.
        if (packet.t === "READY" && current()) this.#caughtUp = this.#startCatchUp(c, this.#newSession(c));
        if (packet.t === "GUILD_CREATE") this.#session.sawGuild(packet.d);
        if (packet.t === "MESSAGE_CREATE") this.#message(packet.d);
        else if (packet.t === "INTERACTION_CREATE") this.#interaction(packet.d);
      } catch (error) {
        this.#log.error({ err: describe(error) }, "discord event handling failed; event dropped");
      }
    });
  }

  /**
   * Logs in and connects the gateway. Throws `ChannelRefusedError` when Discord
   * refuses the bot as configured (token, intents: the operator must act), any
   * other error when Discord could not be reached or did not answer within
   * `startWaitMs` (the hub's supervisor tries again with backoff). Once started,
   * discord.js heals the gateway itself and `status()` follows it.
   */
  async start(onInbound: InboundHandler): Promise<void> {
    this.#onInbound = onInbound;
    this.#stopped = false;
    this.#stopSignal = new AbortController();
    // Each READY's read-back waits on it (for CATCH_UP_BUDGET_MS at most): a gateway that reconnects
    // again and again may give it more than Node's ten listeners before it warns of a leak.
    setMaxListeners(0, this.#stopSignal.signal);
    this.#status.starting();
    if (this.#o.lease) return this.#connectHolding(this.#o.lease);
    await this.#connect().catch((error: unknown) => {
      // The hub's supervisor retries and logs the failure; the status says why meanwhile.
      if (!(error instanceof ChannelRefusedError || error instanceof ChannelStoppedError))
        this.#status.unreachable(describe(error));
      throw error;
    });
  }

  /**
   * Connects only while this process holds the bot's gateway lease, so two hub
   * processes never hold one bot's gateway; waits, reporting the holder, while
   * another process has it, and takes over when it stops. Resolves after the
   * first try (connected, waiting for the lease, or retrying); throws only when
   * Discord refuses the bot as configured.
   */
  async #connectHolding(lease: AccountLease): Promise<void> {
    let first = true;
    let settle: (refused?: unknown) => void = () => {};
    const tried = new Promise<void>((resolve, reject) => {
      settle = (refused) => (refused ? reject(refused) : resolve());
    });
    // True when this settled the start: its caller then reports a refusal.
    const firstTry = (refused?: unknown): boolean => {
      if (!first) return false;
      first = false;
      settle(refused);
      return true;
    };
    const holder = new SingleHolder({
      lease,
      what: "this Discord bot's gateway connection",
      logger: this.#log,
      onWaiting: (reason, nextRetryAt, standby) => {
        this.#status.connecting(reason, nextRetryAt, standby);
        firstTry();
      },
      onLost: (reason) => this.#log.warn({ reason }, "discord gateway lease lost; this process disconnects"),
    });
    this.#holding = holder
      .run(this.#stopSignal.signal, (held) => this.#connectWhileHeld(held, firstTry))
      .catch((error) => this.#log.error({ err: describe(error) }, "discord gateway connection stopped"));
    await tried;
  }

  /** Connects (retrying with backoff) and stays connected until `held` aborts; then disconnects. */
  async #connectWhileHeld(held: AbortSignal, firstTry: (refused?: unknown) => boolean): Promise<void> {
    const { initialMs, maxMs } = this.#o.reconnect ?? { initialMs: 1000, maxMs: 60_000 };
    const backoff = new Backoff(initialMs, maxMs);
    while (!held.aborted) {
      try {
        await this.#connect();
        firstTry();
        break;
      } catch (error) {
        const final = error instanceof ChannelRefusedError || error instanceof ChannelStoppedError;
        // A refusal after the start returned (the lease came later) has no one else to say it.
        if (!firstTry(final ? error : undefined) && error instanceof ChannelRefusedError)
          this.#log.error({ reason: error.message }, `discord channel failed: ${error.message}`);
        if (final) return;
        const wait = backoff.next();
        this.#status.unreachable(describe(error), wait);
        await sleep(wait, held);
      }
    }
    await new Promise<void>((resolve) => {
      if (held.aborted) return resolve();
      held.addEventListener("abort", () => resolve(), { once: true });
    });
    if (this.#stopped) return;
    // The lease went to another process: this one lets the gateway go and waits to take it back.
    const old = this.#client;
    this.#login = undefined;
    this.#client = this.#createClient();
    await this.#destroy(old);
  }

  /** One login and gateway connection (see `start`). */
  async #connect(): Promise<void> {
    // After a failed attempt the status stays "reconnecting" (why, next try): one log line per attempt.
    if (!this.#retrying) this.#status.connecting();
    const client = this.#client;
    const waitMs = this.#o.startWaitMs ?? 20_000;
    // One login at a time: a start that timed out leaves discord.js connecting, and the next start
    // waits for that same login rather than opening a second connection.
    if (!this.#login) {
      const login = client.login(this.#o.token);
      login.catch(() => {}); // observed below or by a later start; never an unhandled rejection
      this.#login = login;
    }
    try {
      // A gateway that never says HELLO or READY would hold login (and this start) for good.
      await Promise.race([
        this.#login,
        sleep(waitMs, this.#stopSignal.signal).then(() => {
          if (this.#stopSignal.signal.aborted) throw new ChannelStoppedError();
          throw new StartTimeout(`Discord's gateway did not get ready within ${Math.round(waitMs / 1000)} s`);
        }),
      ]);
      this.#login = undefined;
    } catch (error) {
      if (error instanceof ChannelStoppedError) throw error; // stop() destroys the client
      if (!(error instanceof StartTimeout)) {
        // A failed discord.js login cannot be repeated: the next attempt gets a fresh client.
        this.#login = undefined;
        await this.#destroy(client);
        this.#client = this.#createClient();
      }
      const fatal = fatalLoginReason(error);
      if (fatal) {
        this.#status.failed(fatal);
        throw new ChannelRefusedError("discord_refused", fatal, { cause: error });
      }
      this.#retrying = true;
      throw new HubError("discord_unreachable", unreachableReason(error), { cause: error });
    }
    this.#retrying = false;
    this.#log.info({ bot: client.user?.username }, "discord bot identified");
  }

  /** Destroys a client, waiting at most STOP_WAIT_MS (see `stop`). */
  async #destroy(client: Client): Promise<boolean> {
    return Promise.race([client.destroy().then(() => true), sleep(STOP_WAIT_MS).then(() => false)]);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopSignal.abort();
    // discord.js can hang destroying a shard that is still waiting for HELLO (its own reconnect
    // nulls the close handler the destroy awaits): never let that hold the hub's shutdown.
    if (!(await this.#destroy(this.#client)))
      this.#log.warn("discord client did not close within 2 s; stopping anyway");
    await this.#holding;
    await this.#o.lease?.close?.().catch(() => undefined);
    await this.#chains.idle();
    await Promise.allSettled([...this.#pending]);
    this.#status.stopped();
  }

  async #registerCommands(): Promise<void> {
    if (this.#o.slashCommands === false) return;
    const appId = this.#client.application?.id;
    if (!appId) return;
    const guildIds = Object.keys(this.#o.guilds ?? {}).filter((g) => g !== "*");
    const routes =
      guildIds.length > 0
        ? guildIds.map((g) => Routes.applicationGuildCommands(appId, g))
        : [Routes.applicationCommands(appId)];
    for (const route of routes) {
      try {
        await this.#client.rest.put(route, { body: SLASH_COMMANDS });
      } catch (error) {
        this.#log.warn({ err: describe(error), route }, "discord slash commands not registered");
      }
    }
  }

  /** Runs inbound work in order per Discord channel, never blocking the gateway's event loop. */
  #enqueue(key: string, work: () => Promise<void>): void {
    void this.#chains.run(key, work).catch((error: unknown) => {
      this.#log.error({ err: describe(error) }, "discord inbound handling failed");
    });
  }

  /** Admits in chat order (the core's sequencer: `/stop` never waits); tracked so `stop()` can wait. */
  #submit(fields: AdapterFields, id: string): Promise<InboundResult> {
    const admitted = this.#sequencer.submit(fields, (f) => this.#deliverInbound(f, id));
    this.#pending.add(admitted);
    void admitted.finally(() => this.#pending.delete(admitted));
    return admitted;
  }

  #message(raw: unknown): void {
    const parsed = DiscordMessageSchema.safeParse(raw);
    if (!parsed.success) {
      this.#log.warn(
        {
          ...identifyingFields(raw, { id: "messageId", channel_id: "channelId" }),
          reason: formatIssues(parsed.error.issues.slice(0, 3)),
        },
        "dropping a Discord message that does not match Discord's Message shape",
      );
      return;
    }
    const msg = parsed.data;
    const caughtUp = this.#caughtUp;
    // Normalizing may fetch a thread's parent: one channel's messages are normalized in order.
    this.#enqueue(msg.channel_id, async () => {
      await caughtUp;
      await this.#handleMessage(msg);
    });
  }

  /** Normalizes a message and hands it to the hub (not awaited: the sequencer keeps each chat's order). */
  async #handleMessage(msg: DiscordMessage): Promise<void> {
    const me = this.#identity(msg.guild_id);
    if (!me) return;
    const context = await this.#channelContext(msg.channel_id, msg.guild_id);
    const result = normalizeMessage(msg, me, {
      accountId: this.accountId,
      guilds: this.#o.guilds ?? {},
      parentId: context.parentId,
      title: context.title,
    });
    if ("skip" in result) {
      // Every other skip is a message meant for no one here; a thread that cannot be placed is a lost question.
      const unplaced = result.skip === UNKNOWN_THREAD_PARENT;
      this.#log[unplaced ? "warn" : "debug"](
        { messageId: msg.id, channelId: msg.channel_id, reason: result.skip },
        unplaced
          ? "discord thread message not answered: its parent channel could not be read"
          : "discord message not for us",
      );
      // Seen in a channel the hub reads back: a read-back after a restart need not ask for it again.
      if (!unplaced && this.#marks.knows(msg.channel_id)) this.#markAfter(msg, Promise.resolve(true));
      return;
    }
    // Taken (or refused for good), even while the adapter stops: a read-back after a restart starts after
    // it (past the dedupe window, one started again would answer it twice). Not a message the stopping
    // adapter never handed over: the next start reads it back.
    const admitted = this.#submit(result.fields, msg.id).then(
      (answer) => answer.kind !== "retry" && answer !== NOT_HANDED,
    );
    this.#markAfter(msg, admitted);
  }

  /**
   * Moves the channel's read-back mark to `msg` once `done` says so, and never before the messages of the
   * channel handed on earlier are settled: a mark past a message whose admission is still being tried
   * would leave it out of the read-back if this process died meanwhile.
   */
  #markAfter(msg: DiscordMessage, done: Promise<boolean>): void {
    const channel = msg.channel_id;
    const before = this.#markTails.get(channel) ?? Promise.resolve();
    const tail = before.then(async () => {
      if (!(await done.catch(() => false))) return;
      await this.#marks
        .remember(channel, msg.guild_id, msg.id)
        .catch((error: unknown) =>
          this.#log.warn({ err: describe(error), messageId: msg.id }, "discord read-back mark not saved"),
        );
    });
    this.#markTails.set(channel, tail);
    // `stop` waits for the mark too: the hub closes its Redis after the adapters stop.
    this.#pending.add(tail);
    void tail.finally(() => {
      this.#pending.delete(tail);
      if (this.#markTails.get(channel) === tail) this.#markTails.delete(channel);
    });
  }

  // A fresh gateway session: what its guilds' creates say of their channels starts empty, and its read-back
  // waits until discord.js has them all (the shard's ready, after READY's guilds arrived or timed out).
  #newSession(client: Client): Promise<void> {
    this.#session = new SessionChannels();
    return new Promise<void>((resolve) => {
      client.once(Events.ShardReady, () => resolve());
      setTimeout(resolve, CATCH_UP_BUDGET_MS).unref();
    });
  }

  /** The read-back after a READY, bounded so live messages never wait for it longer than the budget. */
  #startCatchUp(client: Client, guildsIn: Promise<void>): Promise<void> {
    const done = this.#catchUp(client, guildsIn).catch((error: unknown) =>
      this.#log.warn({ err: describe(error) }, "discord read-back of missed messages failed"),
    );
    return waitAtMost(done, CATCH_UP_BUDGET_MS, this.#stopSignal.signal).then(() => {});
  }

  /**
   * Reads back, per channel the hub took messages from, what was written after the last one it took
   * (within CATCH_UP_WINDOW_MS), and hands it to the hub oldest first; what it took already is a duplicate.
   */
  async #catchUp(client: Client, guildsIn: Promise<void>): Promise<void> {
    const marks = await this.#marks.load();
    // Nothing taken yet (a first start): live messages wait for nothing.
    if (marks.length === 0) return;
    await guildsIn;
    await this.#clientReady(client);
    if (this.#stopped || client !== this.#client) return;
    const since = snowflakeAt(Date.now() - CATCH_UP_WINDOW_MS);
    const session = this.#session;
    const { read, skipped } = channelsToRead(marks, (mark) => session.nothingSince(mark));
    if (skipped > 0)
      this.#log.warn(
        { channels: read.length + skipped, readBack: MAX_CHANNELS },
        "discord: more channels may have missed messages than one read-back asks about; the least recently active are not read back",
      );
    for (const mark of read) {
      // Stopped, or the gateway went to another client (a lost lease): whoever connects next reads back.
      if (this.#stopped || client !== this.#client) return;
      const after = BigInt(mark.after) > BigInt(since) ? mark.after : since;
      const missed = await missedMessages(client.rest, mark.channelId, after).catch((error: unknown) => {
        this.#log.warn(
          { channelId: mark.channelId, err: describe(error) },
          "discord messages missed while the gateway was down could not be read back",
        );
        return [];
      });
      let handed = 0;
      for (const raw of missed) {
        const parsed = DiscordMessageSchema.safeParse({ ...raw, guild_id: mark.guildId });
        if (!parsed.success || parsed.data.author.bot) continue;
        handed++;
        await this.#handleMessage(parsed.data);
      }
      if (handed > 0)
        this.#log.info(
          { channelId: mark.channelId, messages: handed },
          "discord: read back messages written while the gateway was down",
        );
    }
  }

  /** Resolves once discord.js has the bot's user and guilds (after READY and the guilds' creates). */
  async #clientReady(client: Client): Promise<void> {
    if (client.isReady()) return;
    await new Promise<void>((resolve) => {
      client.once(Events.ClientReady, () => resolve());
      setTimeout(resolve, CATCH_UP_BUDGET_MS).unref();
    });
  }

  /** Hands a message to the hub; `retry` is retried here with backoff (the gateway never redelivers). */
  async #deliverInbound(fields: AdapterFields, id: string): Promise<InboundResult> {
    const backoff = new Backoff(this.#o.inboundRetryMs ?? 500, 30_000);
    for (let attempt = 1; ; attempt++) {
      const onInbound = this.#onInbound;
      if (!onInbound || this.#stopped) return NOT_HANDED;
      // The handler answers rather than throws; if it ever throws, that is a transient failure too.
      const result: InboundResult = await onInbound(fields).catch((error: unknown) => ({
        kind: "retry" as const,
        reason: describe(error),
      }));
      if (result.kind === "rejected")
        this.#log.warn({ messageId: id, reason: result.reason }, "discord message rejected");
      if (result.kind !== "retry") return result;
      if (attempt >= INBOUND_ATTEMPTS) {
        this.#log.error(
          { messageId: id, reason: result.reason },
          "discord message could not be accepted; dropped",
        );
        return result;
      }
      const wait = backoff.next();
      this.#log.warn(
        { messageId: id, reason: result.reason, waitMs: wait },
        "discord message not accepted yet; retrying",
      );
      await sleep(wait, this.#stopSignal.signal);
    }
  }

  #identity(guildId: string | undefined): DiscordBotIdentity | undefined {
    const user = this.#client.user;
    if (!user) return undefined;
    const guild = guildId ? this.#client.guilds.cache.get(guildId) : undefined;
    const roleIds = new Set<string>(guild?.members.me?.roles.cache.keys() ?? []);
    for (const role of guild?.roles.cache.values() ?? [])
      if (role.tags?.botId === user.id) roleIds.add(role.id);
    if (guildId) roleIds.delete(guildId); // @everyone is not a mention of the bot
    return { id: user.id, username: user.username, roleIds };
  }

  /** A thread's parent channel and a readable title, from discord.js's cache (fetched when missing). */
  async #channelContext(
    channelId: string,
    guildId: string | undefined,
  ): Promise<{ parentId?: string | undefined; title?: string | undefined }> {
    if (!guildId) return {};
    let channel = this.#client.channels.cache.get(channelId);
    // A thread discord.js first saw in a message is cached from that message alone, without its parent.
    if (!channel || channel.partial || (channel.isThread() && !channel.parentId)) {
      channel =
        (await this.#client.channels.fetch(channelId, { force: true }).catch(() => null)) ?? undefined;
    }
    if (!channel || !("guild" in channel)) return {};
    const parent = channel.isThread() ? (channel.parent ?? undefined) : undefined;
    const named = parent ?? channel;
    return {
      parentId: channel.isThread() ? (channel.parentId ?? undefined) : undefined,
      title: "name" in named ? `${channel.guild.name} #${named.name}` : undefined,
    };
  }

  #interaction(raw: unknown): void {
    const parsed = CommandInteractionSchema.safeParse(raw);
    if (!parsed.success) return; // Components, autocomplete and pings are not ours.
    const i = parsed.data;
    // Deferred at once, outside any queue: Discord drops an interaction not answered within 3 s.
    void this.#answerInteraction(i);
  }

  async #answerInteraction(i: CommandInteraction): Promise<void> {
    let record: InteractionRecord;
    try {
      record = await this.#replies.defer(i);
    } catch (error) {
      this.#log.warn(
        { interactionId: i.id, err: describe(error) },
        "discord slash command could not be deferred",
      );
      return;
    }
    const cached = this.#client.channels.cache.get(i.channel_id);
    const parentId =
      i.channel?.parent_id ?? (cached?.isThread() ? (cached.parentId ?? undefined) : undefined);
    const fields = interactionFields(i, this.accountId, parentId);
    if (!fields) return;
    if (await this.#answeredHere(i, fields, record)) return;
    const result = await this.#submit(fields, i.id);
    if (result.kind === "accepted" || result.kind === "duplicate") return;
    // Not taken: unless the hub answered it (a refusal notice), say so rather than leave "thinking…".
    await sleep(UNANSWERED_CHECK_MS, this.#stopSignal.signal);
    await this.#replies.answerIfUnanswered(
      record,
      result.kind === "retry"
        ? "The hub could not take this command right now; try again in a moment."
        : "This command cannot be used here.",
    );
  }

  /**
   * Answers a slash command the hub is not to take: one used where the guild
   * rules block it, or one the hub does not have (a stale registration, never
   * handed to the model as chat text). Returns whether it answered.
   */
  async #answeredHere(
    i: CommandInteraction,
    fields: AdapterFields,
    record: InteractionRecord,
  ): Promise<boolean> {
    const access = i.guild_id
      ? guildAccess(this.#o.guilds ?? {}, i.guild_id, fields.chat.id, fields.sender.id)
      : undefined;
    if (access && "blocked" in access) {
      this.#log.info(
        { interactionId: i.id, reason: access.blocked },
        "discord slash command not allowed here",
      );
      await this.#replies.editOriginal(record, "This command cannot be used here.").catch(() => {});
      return true;
    }
    const unknown = unknownCommandAnswer(i.data.name);
    if (!unknown) return false;
    this.#log.info({ interactionId: i.id, command: i.data.name }, "discord slash command unknown; answered");
    await this.#replies.editOriginal(record, unknown).catch(() => {});
    return true;
  }

  async send(
    segment: OutboundSegment,
    target: ReplyTarget,
    options: { signal?: AbortSignal } = {},
  ): Promise<SendResult> {
    try {
      const replyTo = target.replyToMessageId;
      // A file is always a channel message (interaction replies carry text only).
      if (replyTo?.startsWith(INTERACTION_PREFIX) && !segment.attachment) {
        const answered = await this.#replies.send(
          segment,
          replyTo.slice(INTERACTION_PREFIX.length),
          options.signal,
        );
        if (answered) return answered;
      }
      const plain = replyTo?.startsWith(INTERACTION_PREFIX)
        ? { ...target, replyToMessageId: undefined }
        : target;
      const message = (await this.#client.rest.post(Routes.channelMessages(channelOf(target)), {
        ...(segment.attachment
          ? await fileMessageRequest(segment, plain)
          : { body: messageBody(segment, plain) }),
        ...(options.signal ? { signal: options.signal } : {}),
      })) as { id?: string };
      this.#status.tokenAccepted();
      return message.id ? { messageId: message.id } : {};
    } catch (error) {
      throw this.#classify(error);
    }
  }

  #classify(error: unknown): unknown {
    if (error instanceof RateLimitError) {
      return new RateLimitedError(
        Math.max(error.retryAfter, error.timeToReset, 1),
        `Discord rate limit on ${error.route}${error.global ? " (global)" : ""}`,
      );
    }
    // Discord's errors carry the request URL, which holds the interaction token on webhook routes:
    // they are never passed on (the hub logs send errors), only their status, message and code.
    if (error instanceof DiscordAPIError) {
      const what = `${error.status} ${error.message} (code ${error.code})`;
      // An interaction's webhook (its own token, 15 minutes) answers 401 when that token expired: not the bot's.
      if (error.status === 401 && !/\/(webhooks|interactions)\//.test(error.url)) this.#tokenRefused(what);
      if (isPermanentStatus(error.status))
        return new PermanentSendError(`Discord refused the message: ${what}`, {
          chatRefuses: error.status === 401 || CHAT_REFUSAL_CODES.has(Number(error.code)),
        });
      return new Error(`Discord answered ${what}`);
    }
    if (error instanceof HTTPError) return new Error(`Discord answered ${error.status} ${error.message}`);
    return error;
  }

  // Discord refused the bot token on a send: the channel shows failed, with what to do, until a send goes
  // through (the token is kept: see #createClient).
  #tokenRefused(what: string): void {
    const key = keyOrVariable(accountConfigPath("discord", this.accountId), "token", "DISCORD_BOT_TOKEN");
    this.#status.tokenRefused(
      `Discord refused the bot token on a send (${what}); put a valid one in ${key} (Developer Portal > Bot > Reset Token) and restart the hub`,
    );
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    await this.#client.rest.post(Routes.channelTyping(channelOf(target)));
  }

  /** Downloads an attachment from its CDN URL (`Media.ref`, signed by Discord and valid for about a day). */
  async fetchMedia(media: Media, options: FetchMediaOptions): Promise<FetchedMedia> {
    if (!/^https?:\/\//.test(media.ref)) throw new Error("a Discord attachment reference must be its URL");
    return fetchMediaUrl(media.ref, { ...options, platform: "Discord", declaredSize: media.size });
  }

  /** Edits a message the bot sent (a live preview) into `segment`. */
  async edit(
    messageId: string,
    segment: OutboundSegment,
    target: ReplyTarget,
    options: { signal?: AbortSignal } = {},
  ): Promise<void> {
    try {
      await editMessage(this.#client.rest, messageId, segment, target, options.signal);
    } catch (error) {
      throw this.#classify(error);
    }
  }

  /** Deletes a message the bot sent (an abandoned live preview). */
  async deleteMessage(target: ReplyTarget, messageId: string): Promise<void> {
    try {
      await deleteMessage(this.#client.rest, target, messageId);
    } catch (error) {
      throw this.#classify(error);
    }
  }

  /** Sets or removes the bot's reaction on a message; removing takes off the emoji this process set. */
  async react(
    target: ReplyTarget,
    messageId: string,
    emoji: string | null,
    previous?: string,
  ): Promise<void> {
    await this.#reactions.react(`${channelOf(target)}/${messageId}`, { target, messageId }, emoji, previous);
  }
}

/** A start that waited `startWaitMs` for a login still in progress. */
class StartTimeout extends Error {}

/** Why a login can never succeed as configured (the operator must act), or undefined when a retry may help. */
function fatalLoginReason(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : String(error);
  if (/token/i.test(message) && /invalid/i.test(message))
    return "Discord refused the bot token; set a valid channels.discord.token or DISCORD_BOT_TOKEN (Developer Portal > Bot > Reset Token).";
  if (/disallowed intents/i.test(message)) return describeClose(4014);
  if (/invalid intents/i.test(message)) return describeClose(4013);
  if (/authentication failed/i.test(message)) return describeClose(4004);
  if (/sharding is required/i.test(message)) return describeClose(4011);
  return undefined;
}

// Why a login that may work later failed, and what to do about it.
function unreachableReason(error: unknown): string {
  const cause = describe(error);
  // discord.js refuses to identify when GET /gateway/bot says the daily session starts are spent.
  if (/not enough sessions remaining/i.test(cause))
    return `Discord's daily limit of gateway session starts for this bot is used up (${cause}); the hub tries again until it resets. Restarting the hub in a loop spends the next day's starts, so find what restarts it.`;
  return `could not connect to Discord (${cause}); check channels.discord.restApi and the network.`;
}

/**
 * Discord's error codes that refuse every message to the channel, not only this one: Unknown Channel,
 * Missing Access, Cannot send messages to this user. A 403 Missing Permissions (50013) can be this
 * message's own (a file, an embed): a note in its place may still arrive.
 */
const CHAT_REFUSAL_CODES = new Set([10003, 50001, 50007]);

/** What a message gets once the adapter stops: not handed to the hub (no mark; the next start reads it back). */
const NOT_HANDED: InboundResult = { kind: "ignored", reason: "the adapter is stopping" };

function describe(error: unknown): string {
  if (error instanceof DiscordAPIError) return `${error.status} ${error.message} (code ${error.code})`;
  return error instanceof Error ? error.message : String(error);
}
