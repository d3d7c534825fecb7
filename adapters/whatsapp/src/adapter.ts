import {
  type AccountLease,
  type AdapterFields,
  Backoff,
  type ChannelAdapter,
  type ChannelCapabilities,
  type ChannelLinkCode,
  type ChannelPacing,
  type ChannelStatus,
  ChannelStatusCell,
  capBytes,
  checkDeclaredSize,
  describeError,
  describeHolder,
  type FetchedMedia,
  type FetchMediaOptions,
  type HubLogger,
  type InboundHandler,
  type InboundResult,
  InboundSequencer,
  isUrgentCommand,
  type Media,
  type OutboundSegment,
  type PacingLimits,
  pacingCapabilities,
  type ReplyTarget,
  resolvePacing,
  type SendResult,
  sleep,
} from "@hub/core";
import type { WAMessage } from "@whiskeysockets/baileys";
import { type CloseVerdict, classifyClose } from "./connection.js";
import { fromJournal, type JournaledMessage, type MessageJournal, toJournal } from "./journal.js";
import {
  type NormalizedMessage,
  normalizeWhatsAppMessage,
  type SelfIdentity,
  selfIdentity,
} from "./normalize.js";
import { Outbound } from "./outbound.js";
import { renderWhatsApp } from "./render.js";
import type { WhatsAppConnector, WhatsAppEventMap, WhatsAppSocket } from "./socket.js";

/** Options of the WhatsApp adapter (from `channels.whatsapp` plus wiring). */
export interface WhatsAppAdapterOptions {
  accountId?: string;
  connector: WhatsAppConnector;
  logger: HubLogger;
  /** The account lease (one hub process holds the socket); none in single-process tests. */
  lease?: AccountLease;
  textLimit?: number;
  maxMessageAgeMs?: number;
  sendIntervalMs?: number;
  groupSendIntervalMs?: number;
  /** `channels.whatsapp.pacing`: overrides of the two intervals above and of the 5 sends per second. */
  pacing?: ChannelPacing;
  presence?: boolean;
  reconnect?: { initialMs: number; maxMs: number };
  /** How often a logged-out account checks whether it was linked again (ms). */
  linkPollMs?: number;
  /** Presence `paused` follows this long after the last `composing` refresh (ms). */
  pauseAfterMs?: number;
  /**
   * Where received messages are kept until their admission is decided (see `MessageJournal`). Without one,
   * a message the hub could not take before the process stopped or died is lost: WhatsApp never redelivers.
   */
  journal?: MessageJournal;
  /** The capped backoff between tries of a message the hub could not admit yet (default 500 ms to 30 s). */
  admitRetry?: { initialMs: number; maxMs: number };
  /** The code a `hub channels login` in progress shows, reported in the status for the owner's web chat. */
  pendingLink?: () => Promise<ChannelLinkCode | undefined>;
}

const RECENT_LIMIT = 512;

/**
 * WhatsApp through a baileys linked device. One connection attempt is one
 * socket from the connector; closes are read from `connection.update`
 * (recoverable ones reconnect with capped backoff, 401 removes the dead
 * credentials and waits for a new link, 440/403/411 stop and report). With a
 * lease, only the process holding it opens a socket; the others wait and take
 * over when it stops renewing (a 440 after this process could not renew is
 * such a takeover: it waits for the lease again). Inbound messages of one
 * chat are admitted in order; old ones (offline backlog, replays) are not
 * answered.
 */
export class WhatsAppAdapter implements ChannelAdapter {
  readonly channel = "whatsapp";
  readonly capabilities: ChannelCapabilities;
  readonly accountId: string;
  readonly #o: WhatsAppAdapterOptions;
  readonly #pacing: PacingLimits;
  readonly #log: HubLogger;
  readonly #status: ChannelStatusCell;
  readonly #stop = new AbortController();
  readonly #sequencer = new InboundSequencer();
  /** Recent inbound messages by `<chat>/<id>`: quoted in replies, and their media downloaded. */
  readonly #recent = new Map<string, WAMessage>();
  readonly #outbound: Outbound;
  #socket: WhatsAppSocket | undefined;
  #self: SelfIdentity = { ids: new Set() };
  #onInbound: InboundHandler | undefined;
  #loop: Promise<void> | undefined;
  /** Looks for journals other processes left behind (see `#adoptJournaled`). */
  #adopting: ReturnType<typeof setInterval> | undefined;
  #link: ChannelLinkCode | undefined;
  /** Sockets opened so far (a reconnect loop shows here). */
  opened = 0;

  constructor(options: WhatsAppAdapterOptions) {
    this.#o = options;
    this.accountId = options.accountId ?? "default";
    this.#log = options.logger.child({ channel: "whatsapp", accountId: this.accountId });
    this.#status = new ChannelStatusCell((status) => {
      const line = `whatsapp ${status.state.replace("_", " ")}${status.reason ? `: ${status.reason}` : ""}`;
      if (status.state === "failed" || status.state === "logged_out") this.#log.error(line);
      else this.#log.info({ reason: status.reason }, line);
    });
    // WhatsApp publishes no limits; a linked device sending faster than people do risks a ban.
    const platform = {
      chatIntervalMs: options.sendIntervalMs ?? 1000,
      groupIntervalMs: options.groupSendIntervalMs ?? 2500,
      maxSendsPerSecond: 5,
    };
    this.#pacing = resolvePacing(platform, options.pacing);
    this.capabilities = {
      textLimit: options.textLimit ?? 4000,
      markdown: "whatsapp",
      threads: false,
      typing: options.presence ?? true,
      edit: false,
      files: true,
      ...pacingCapabilities(this.#pacing),
      streamMinChars: 1500,
      // The socket delivers a message once: one the hub did not take is never delivered again.
      redelivers: false,
      measure: (markdown) => renderWhatsApp(markdown).length,
    };
    this.#outbound = new Outbound({
      socket: () => this.#socket,
      recent: this.#recent,
      presence: options.presence ?? true,
      pauseAfterMs: options.pauseAfterMs ?? 8000,
      log: this.#log,
      leaseValid: () => options.lease?.valid() ?? true,
    });
  }

  /** The connection state (connecting, connected, reconnecting with the reason, logged out, failed). */
  status(): ChannelStatus {
    const status = this.#status.get();
    return this.#link && status.state === "logged_out" ? { ...status, link: this.#link } : status;
  }

  /**
   * Starts the connection loop and resolves after its first attempt
   * (connected, waiting to reconnect, waiting for a link or for the lease):
   * the loop reports its state through `status()` from then on.
   */
  async start(onInbound: InboundHandler): Promise<void> {
    this.#onInbound = onInbound;
    let firstAttempt: () => void = () => {};
    const settled = new Promise<void>((resolve) => (firstAttempt = resolve));
    this.#loop = this.#run(firstAttempt);
    await settled;
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    clearInterval(this.#adopting);
    await this.#loop;
    // What is still undecided stays on disk for the next start.
    this.#o.journal?.stop();
    this.#outbound.clear();
    const lease = this.#o.lease;
    await (lease?.close ? lease.close() : lease?.release())?.catch(() => undefined);
    this.#status.set("stopped");
  }

  async #run(firstAttempt: () => void): Promise<void> {
    const { initialMs, maxMs } = this.#o.reconnect ?? { initialMs: 1000, maxMs: 60_000 };
    const backoff = new Backoff(initialMs, maxMs);
    const signal = this.#stop.signal;
    this.#status.set("connecting");
    while (!signal.aborted) {
      if (!(await this.#linked())) {
        firstAttempt();
        await sleep(this.#o.linkPollMs ?? 5000, signal);
        continue;
      }
      if (!(await this.#holdLease())) {
        firstAttempt();
        await sleep(Math.max(500, (this.#o.lease?.ttlMs ?? 3000) / 3), signal);
        continue;
      }
      const { verdict, wasOpen } = await this.#connection(firstAttempt);
      if (!verdict) break;
      if (wasOpen) backoff.reset();
      if (verdict.action === "stop") {
        this.#status.set("failed", { reason: verdict.reason });
        break;
      }
      if (verdict.action === "logged_out") {
        await this.#o.connector.forget().catch((error) => this.#log.error({ err: describeError(error) }));
        this.#status.set("logged_out", { reason: verdict.reason });
        await this.#o.lease?.release().catch(() => undefined);
        continue;
      }
      const wait = verdict.immediate ? 0 : backoff.next();
      this.#status.set("reconnecting", { reason: verdict.reason, nextRetryAt: Date.now() + wait });
      firstAttempt();
      await this.#waitHolding(wait);
    }
    firstAttempt();
    await this.#o.lease?.release().catch(() => undefined);
  }

  /** Waits before a reconnect, renewing the lease meanwhile: a backoff longer than the lease is no handover. */
  async #waitHolding(ms: number): Promise<void> {
    const lease = this.#o.lease;
    const until = Date.now() + ms;
    while (!this.#stop.signal.aborted && Date.now() < until) {
      await sleep(Math.min(until - Date.now(), lease ? lease.ttlMs / 3 : ms), this.#stop.signal);
      if (lease && Date.now() < until) await lease.hold().catch(() => undefined);
    }
  }

  /** Whether a device is linked; while not, the status says how to link it (a 401's reason is kept). */
  async #linked(): Promise<boolean> {
    const linked = await this.#o.connector.isLinked().catch(() => false);
    this.#link = linked ? undefined : await this.#o.pendingLink?.().catch(() => undefined);
    if (!linked && this.#status.get().state !== "logged_out") {
      this.#status.set("logged_out", {
        reason: 'no linked device; link one with "hub channels login whatsapp" (QR code or --phone)',
      });
    }
    return linked;
  }

  /** Takes the account's lease (true), or reports who holds it and waits to take over (false). */
  async #holdLease(): Promise<boolean> {
    const lease = this.#o.lease;
    if (!lease) return true;
    try {
      const { held, holder } = await lease.hold();
      if (held) return true;
      this.#status.set("reconnecting", {
        reason: `another hub process (${describeHolder(holder)}) holds this WhatsApp account; taking over when it stops`,
        nextRetryAt: Date.now() + lease.ttlMs / 3,
        standby: true,
      });
    } catch (error) {
      this.#status.set("reconnecting", {
        reason: `the account lease is unavailable (${describeError(error)})`,
      });
    }
    return false;
  }

  /** One socket from open to close: what its close means, and whether it was ever open. */
  async #connection(firstAttempt: () => void): Promise<{ verdict?: CloseVerdict; wasOpen: boolean }> {
    if (this.#status.get().state !== "reconnecting") this.#status.set("connecting");
    let socket: WhatsAppSocket;
    try {
      socket = await this.#o.connector.open();
      this.opened++;
    } catch (error) {
      const reason = `could not open a connection (${describeError(error)})`;
      return { verdict: { action: "reconnect", reason, immediate: false }, wasOpen: false };
    }
    if (this.#stop.signal.aborted) {
      // Stopped while the socket was being opened: its abort listener would never fire.
      socket.end(undefined);
      return { wasOpen: false };
    }
    let wasOpen = false;
    const verdict = await new Promise<CloseVerdict | undefined>((resolve) => {
      let finished = false;
      const done = (v: CloseVerdict | undefined) => {
        if (finished) return;
        finished = true;
        clearInterval(renew);
        this.#stop.signal.removeEventListener("abort", abort);
        if (this.#socket === socket) this.#socket = undefined;
        resolve(v);
      };
      const abort = () => {
        done(undefined);
        socket.end(undefined);
      };
      const renew = this.#renewLease(socket, done);
      this.#stop.signal.addEventListener("abort", abort, { once: true });
      socket.ev.on("connection.update", (update) => {
        if (update.qr) {
          setImmediate(() => socket.end(undefined));
          return done({
            action: "logged_out",
            reason: 'WhatsApp asks to link this device again; run "hub channels login whatsapp"',
          });
        }
        if (update.connection === "open") {
          wasOpen = true;
          this.#opened(socket);
          firstAttempt();
        }
        if (update.connection === "close") {
          const lease = this.#o.lease;
          done(classifyClose(update.lastDisconnect?.error, lease !== undefined && !lease.valid()));
        }
      });
      socket.ev.on("messages.upsert", (event) => void this.#upsert(event));
    });
    return { ...(verdict ? { verdict } : {}), wasOpen };
  }

  #opened(socket: WhatsAppSocket): void {
    this.#socket = socket;
    this.#self = selfIdentity(socket.user);
    this.#status.set("connected");
    this.#adoptJournaled();
    this.#adopting ??= setInterval(() => {
      if (this.#status.get().state === "connected") this.#adoptJournaled();
    }, 60_000).unref();
  }

  /** Renews the lease while the socket lives; a lost lease closes the socket before anything else is sent. */
  #renewLease(
    socket: WhatsAppSocket,
    done: (v: CloseVerdict) => void,
  ): ReturnType<typeof setInterval> | undefined {
    const lease = this.#o.lease;
    if (!lease) return undefined;
    // Said once per outage, not at every renewal: a Redis that stays down for minutes is one event.
    let failing = false;
    return setInterval(() => {
      lease
        .hold()
        .then(({ held }) => {
          if (failing) this.#log.info("whatsapp lease renewed again");
          failing = false;
          if (held) return;
          this.#log.error("whatsapp account lease lost to another process; closing this connection");
          done({ action: "reconnect", reason: "the account lease was taken over", immediate: false });
          socket.end(undefined);
        })
        .catch((error) => {
          if (!failing)
            this.#log.warn(
              { err: describeError(error) },
              "whatsapp lease renewal failed; the socket stays open and received messages are journaled until Redis answers",
            );
          failing = true;
        });
    }, lease.ttlMs / 3);
  }

  async #upsert(event: WhatsAppEventMap["messages.upsert"]): Promise<void> {
    const messages: unknown[] = Array.isArray(event?.messages) ? event.messages : [];
    await Promise.all(messages.map((raw) => this.handleMessage(raw)));
  }

  /**
   * Handles one message of `messages.upsert` (live, or offline backlog on
   * reconnect): normalized, too old ones ignored, admitted in chat order.
   * WhatsApp never redelivers, so the message is journaled from receipt until
   * its admission is decided, and a transient failure is tried again until
   * the hub takes it or the adapter stops. Never throws.
   */
  async handleMessage(raw: unknown): Promise<InboundResult> {
    const onInbound = this.#onInbound;
    if (!onInbound) return { kind: "retry", reason: "the adapter is not started" };
    const read = this.#read(raw);
    if ("kind" in read) return read;
    const maxAge = this.#o.maxMessageAgeMs ?? 10 * 60_000;
    if (Date.now() - read.fields.timestamp > maxAge) {
      this.#log.info({ messageId: read.fields.messageId }, "whatsapp message too old to answer; ignored");
      return { kind: "ignored", reason: "older than maxMessageAgeMs" };
    }
    this.#remember(read);
    return this.#admitKept(read.fields, onInbound, this.#record(raw, read.fields.messageId));
  }

  // A message's fields (and key and content, kept for quotes and media), or why it is not admitted.
  #read(raw: unknown): Extract<NormalizedMessage, { ok: true }> | InboundResult {
    let normalized: NormalizedMessage;
    try {
      normalized = normalizeWhatsAppMessage(raw, this.#self, { accountId: this.accountId });
    } catch (error) {
      // Whatever threw on this message would throw on it again: it can never be accepted.
      normalized = { ok: false, reason: `unreadable message (${describeError(error)})`, ignored: false };
    }
    if (normalized.ok) return normalized;
    const log = { messageId: normalized.messageId, reason: normalized.reason };
    if (normalized.ignored) this.#log.debug(log, "whatsapp message not for us");
    else this.#log.warn(log, "dropping a malformed WhatsApp message");
    return normalized.ignored
      ? { kind: "ignored", reason: normalized.reason }
      : { kind: "rejected", reason: normalized.reason };
  }

  // Records a message before its admission, without an fsync (it survives this process's death; the first
  // failed try syncs it). A message the disk refuses is still admitted, only without a copy.
  #record(raw: unknown, messageId: string): string | undefined {
    const journal = this.#o.journal;
    if (!journal) return undefined;
    try {
      return journal.record(toJournal(raw), { sync: false });
    } catch (error) {
      this.#log.warn(
        { messageId, err: describeError(error) },
        "whatsapp message could not be journaled; admitting it without a copy on disk (a crash before its admission loses it)",
      );
      return undefined;
    }
  }

  // Admits a message in its chat's order (the tries hold the chat's later messages back), and settles its
  // journal record once decided; one still undecided when the adapter stops stays for the next start.
  // An urgent command (`/stop`) skips its chat's queue for its first try only: one the hub cannot take at
  // once waits behind the chat's earlier messages, as does a replayed one (adopted from a journal), or it
  // would be admitted ahead of the messages it means to stop once Redis is back, and they would run.
  async #admitKept(
    fields: AdapterFields,
    onInbound: InboundHandler,
    key: string | undefined,
    replayed = false,
  ): Promise<InboundResult> {
    let result: InboundResult | undefined;
    if (!replayed && isUrgentCommand(fields.body))
      result = await this.#sequencer.submit(fields, (f) => this.#tryUntilDecided(f, onInbound, true));
    if (result === undefined || (result.kind === "retry" && !this.#stop.signal.aborted))
      result = await this.#sequencer.submit(fields, (f) => this.#tryUntilDecided(f, onInbound), {
        inLine: true,
      });
    if (key !== undefined && result.kind !== "retry") this.#o.journal?.settle(key);
    return result;
  }

  // One warning when the tries begin and one line when they end, not one per try.
  // `once`: one try only (an urgent command's first, see `#admitKept`).
  async #tryUntilDecided(
    fields: AdapterFields,
    onInbound: InboundHandler,
    once = false,
  ): Promise<InboundResult> {
    const { initialMs, maxMs } = this.#o.admitRetry ?? { initialMs: 500, maxMs: 30_000 };
    const backoff = new Backoff(initialMs, maxMs);
    const journal = this.#o.journal;
    const messageId = fields.messageId;
    for (let tries = 1; ; tries++) {
      const result = await onInbound(fields).catch(
        (error): InboundResult => ({ kind: "retry", reason: describeError(error) }),
      );
      if (result.kind === "rejected")
        this.#log.warn({ messageId, reason: result.reason }, "whatsapp message rejected");
      if (result.kind !== "retry") {
        if (tries > 1)
          this.#log.info(
            { messageId, tries, outcome: result.kind },
            result.kind === "accepted"
              ? "whatsapp message admitted after retries"
              : "whatsapp message decided after retries; the hub did not take it (see outcome)",
          );
        return result;
      }
      if (tries === 1) journal?.sync();
      if (once) return result;
      if (tries === 1)
        this.#log.warn(
          { messageId, reason: result.reason },
          "whatsapp message could not be admitted yet; trying again until it is (WhatsApp does not redeliver)",
        );
      journal?.touch();
      // Returns at once if the adapter already stopped; a stop also cuts the wait short. No try after a
      // stop: the hub is going down, and the next start admits the message.
      await sleep(backoff.next(), this.#stop.signal);
      if (this.#stop.signal.aborted) {
        this.#log.warn(
          { messageId, tries },
          journal
            ? "whatsapp adapter stopped before a message could be admitted; the next start admits it"
            : "whatsapp adapter stopped before a message could be admitted; it is not answered",
        );
        return result;
      }
    }
  }

  // Messages received by processes that are gone (a crash, a restart) and never admitted: when the socket
  // opens (the mentions of the bot need its identity), and every minute while it is open, for journals of
  // processes this one cannot tell are gone (another container: see ORPHAN_IDLE_MS).
  #adoptJournaled(): void {
    const journal = this.#o.journal;
    const onInbound = this.#onInbound;
    if (!journal || !onInbound || this.#stop.signal.aborted) return;
    let adopted: Array<{ key: string; delivery: JournaledMessage }>;
    try {
      adopted = journal.adoptOrphans();
    } catch (error) {
      this.#log.warn(
        { err: describeError(error) },
        "whatsapp: journaled messages of an earlier process not read",
      );
      return;
    }
    if (adopted.length > 0)
      this.#log.info(
        { count: adopted.length },
        "whatsapp: admitting messages an earlier process received and never admitted",
      );
    for (const { key, delivery } of adopted) void this.#admitAdopted(key, delivery, onInbound);
  }

  // An adopted message is admitted whatever its age: it was young enough when it was received.
  async #admitAdopted(key: string, json: JournaledMessage, onInbound: InboundHandler): Promise<void> {
    let read: Extract<NormalizedMessage, { ok: true }> | InboundResult;
    try {
      read = this.#read(fromJournal(json));
    } catch (error) {
      read = { kind: "rejected", reason: `unreadable journaled message (${describeError(error)})` };
    }
    if ("kind" in read) {
      this.#o.journal?.settle(key);
      return;
    }
    this.#remember(read);
    await this.#admitKept(read.fields, onInbound, key, true);
  }

  #remember({ fields, key, message }: Extract<NormalizedMessage, { ok: true }>): void {
    const ref = `${fields.chat.id}/${fields.messageId}`;
    this.#recent.delete(ref);
    this.#recent.set(ref, { key, message } as WAMessage);
    if (this.#recent.size > RECENT_LIMIT) this.#recent.delete(this.#recent.keys().next().value as string);
  }

  sendIntervalMs(target: ReplyTarget): number {
    return target.chatId.endsWith("@g.us") ? this.#pacing.groupIntervalMs : this.#pacing.chatIntervalMs;
  }

  send(segment: OutboundSegment, target: ReplyTarget): Promise<SendResult> {
    return this.#outbound.send(segment, target);
  }

  sendTyping(target: ReplyTarget): Promise<void> {
    return this.#outbound.composing(target);
  }

  /**
   * Sets (`emoji`) or removes (`null`) the bot's reaction on a message: a reaction message naming the
   * message's key (a recent inbound message's own key, which names the sender in a group).
   */
  async react(target: ReplyTarget, messageId: string, emoji: string | null): Promise<void> {
    const socket = this.#socket;
    if (!socket) throw new Error("WhatsApp is not connected");
    const key = this.#recent.get(`${target.chatId}/${messageId}`)?.key ?? {
      remoteJid: target.chatId,
      id: messageId,
      fromMe: false,
    };
    await socket.sendMessage(target.chatId, { react: { text: emoji ?? "", key } });
  }

  /**
   * Downloads the media of a recent inbound message (`Media.ref` is `<chat>/<message id>`): only the
   * process holding the account's connection has the message and its media keys, for its last
   * `RECENT_LIMIT` messages.
   */
  async fetchMedia(media: Media, options: FetchMediaOptions): Promise<FetchedMedia> {
    checkDeclaredSize(media.size, options.maxBytes);
    const message = this.#recent.get(media.ref);
    const connector = this.#o.connector;
    if (!message || !connector.download)
      throw new Error(`WhatsApp media ${media.ref} is not available to download in this process`);
    const body = await connector.download(message);
    return { body: capBytes(body, options.maxBytes), size: media.size };
  }
}
