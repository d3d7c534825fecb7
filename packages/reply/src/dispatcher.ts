import {
  attachmentFallbackText,
  type ChannelAdapter,
  type ChannelCapabilities,
  type FailpointName,
  failpoint,
  type HubLogger,
  type OutboundSegment,
  type Outbox,
  PermanentSendError,
  type ReplyOpenOptions,
  type ReplySettlement,
  type ReplySink,
  type ReplyStream,
  type ReplyTarget,
  replyTargetKey,
  type SendResult,
  type StopSignal,
} from "@hub/core";
import {
  type ClaimedKey,
  createRedis,
  type DrainContext,
  groupEndId,
  loadScript,
  type MailboxTuning,
  type MailboxWorker,
  OrderedMailbox,
  type RemoteWorker,
  runScript,
  WorkerRoom,
} from "@hub/queue";
import type { Redis } from "ioredis";
import { segmentToSend } from "./attachments.js";
import { FailedDeliveries } from "./failed-deliveries.js";
import { LivePreviews, type PreviewIo } from "./preview.js";
import { OpenReply, type SettleWaiter } from "./reply-stream.js";
import { parseSegmentItem, type SegmentItem } from "./segment-item.js";
import { type SettleRelay, WaitsElsewhere } from "./settle-relay.js";

/** A send given up after timing out twice: it may have been posted, so nothing stands in for it. */
class UnknownOutcomeError extends PermanentSendError {}

/** How long a platform may take over a file besides its upload (Telegram answers a document after 12 s at times). */
const FILE_PROCESSING_MS = 20_000;

/** The slowest uplink a file's upload is given time for (1 Mbit/s), on top of the send timeout. */
const MIN_UPLOAD_BYTES_PER_SECOND = 128 * 1024;

/**
 * How long a send with a file may take: the send timeout, 20 s for the platform's processing, plus the
 * file's upload at 1 Mbit/s (a 20 MB file: 160 s more). The send timeout alone cut every upload slower
 * than 2 MB/s short at 10 s.
 */
export function uploadTimeoutMs(sendTimeoutMs: number, bytes: number): number {
  return sendTimeoutMs + FILE_PROCESSING_MS + Math.ceil((bytes / MIN_UPLOAD_BYTES_PER_SECOND) * 1000);
}

/** The fields every log line about a segment carries: its run (the reply id), session and channel. */
function segmentLogFields(segment: SegmentItem): Record<string, unknown> {
  return {
    runId: segment.runId ?? segment.replyId,
    ...(segment.sessionKey ? { sessionKey: segment.sessionKey } : {}),
    channel: segment.target.channel,
    index: segment.index,
  };
}

/** Options of the ReplyDispatcher. */
export interface ReplyDispatcherOptions extends MailboxTuning {
  redisUrl: string;
  /**
   * A commands connection to share with the rest of the process (left open by `close`; see
   * `OrderedMailboxOptions.redis`). Without it, the dispatcher opens its own.
   */
  redis?: Redis | undefined;
  prefix: string;
  logger: HubLogger;
  /** The capabilities (text limit, pacing) of a channel, for chunking and pacing. */
  capabilitiesOf: (channel: string) => ChannelCapabilities | undefined;
  /** Tries per segment before it is given up (default 8). */
  maxAttempts?: number | undefined;
  /** A send slower than this is abandoned (an unknown outcome) and retried once (default 10 s). */
  sendTimeoutMs?: number | undefined;
  /** A segment older than this when its turn comes is not sent: recorded as expired, the chat told once. */
  maxAgeMs?: number | undefined;
  /** Where queued files' bytes are read from when they are sent (`<state dir>/outbox`). */
  outbox?: Outbox | undefined;
  /**
   * The delivery worker of another thread of this process (an agent thread's dispatcher: the main
   * thread's, see `deliveryRoom`): a push claims an idle target for it in the push's own step while it has
   * room, as a push claims one for this dispatcher's own delivery, instead of waking it through Redis.
   */
  remoteDelivery?: RemoteWorker | undefined;
  /** With `remoteDelivery`: the delivering thread tells this one its replies' settlements (see `SettleRelay`). */
  settleRelay?: SettleRelay | undefined;
}

/** What a chat is told, once, when answers to it expired unsent. */
const EXPIRED_NOTICE =
  "Sorry, my answer to an earlier message (or more than one) could not be delivered in time and was dropped. Please send your message again if you still need an answer.";

const SEND_GATE = loadScript(new URL("./scripts/send-gate.lua", import.meta.url));

/** Keeps settlement records this long after a reply's end. */
const REPLY_TTL_SECONDS = 24 * 3600;
// How long a reply opened `once` stays queued once: as long as the run record whose end repeats its push.
const ONCE_TTL_SECONDS = 7 * 24 * 3600;

/**
 * Delivers replies: blocks are chunked to the target channel's limit and put
 * in the target's ordered mailbox (one per chat + thread), so segments reach
 * the platform in the order they were produced, across replies and across
 * delivery processes. Settlement is tracked in Redis, so any process can
 * await a reply delivered by another: a reply is a group of its target's
 * mailbox (segment ids `<replyId>#<index>`, its last item naming the total),
 * so the ack of its last item settles it in the same step and announces the
 * counts; only failed segments are counted on the way (see OpenReply).
 */
export class ReplyDispatcher implements ReplySink {
  readonly #o: ReplyDispatcherOptions;
  readonly #mailbox: OrderedMailbox<SegmentItem>;
  readonly #redis: Redis;
  #subscribed: Promise<void> | undefined;
  #subscriber: Redis | undefined;
  readonly #waiters = new Map<string, Set<(settlement: ReplySettlement) => void>>();
  /** Other threads' waits for replies this dispatcher's delivery settles. */
  readonly #elsewhere = new WaitsElsewhere();
  readonly #previews: LivePreviews;
  /** Its delivery's room as other threads see it, once it delivers (`startDelivery`). */
  #room: WorkerRoom | undefined;
  /** The adapters this process delivers through, once it delivers (`startDelivery`). */
  #adapterOf: ((channel: string, accountId: string) => ChannelAdapter | undefined) | undefined;

  constructor(options: ReplyDispatcherOptions) {
    this.#o = options;
    this.#redis = options.redis ?? createRedis(options.redisUrl);
    this.#previews = new LivePreviews(this.#redis, options.prefix);
    this.#mailbox = new OrderedMailbox<SegmentItem>({
      name: "reply",
      redisUrl: options.redisUrl,
      redis: this.#redis,
      prefix: options.prefix,
      logger: options.logger,
      parse: parseSegmentItem,
      maxAttempts: options.maxAttempts,
      leaseMs: options.leaseMs,
      graceMs: options.graceMs,
      sweepIntervalMs: options.sweepIntervalMs,
      instanceId: options.instanceId,
      logFields: segmentLogFields,
      // A reply's last item (`<replyId>#<index or close or end>$<total>`) settles it when acked; failed segments
      // (`<replyId>#<index>`) are counted on the way; previews (`#p<n>`) count nowhere.
      // A reply its own run waits for in this process (or on an agent thread it delivers for, see SettleRelay)
      // is settled to that waiter, not published; an ack whose answer is lost (the connection dropped after
      // the step ran) tells nobody, and the waits read the settlement after a while instead (see #until).
      groups: {
        ttlSeconds: REPLY_TTL_SECONDS,
        waiterHere: (replyId) => bothWaiters(this.#wakerOf(replyId), this.#elsewhere.waiterOf(replyId)),
      },
      onFailed: async (item, error) => {
        // A preview that could not be shown is not a segment of the reply: nothing to keep.
        if (item.data.kind !== undefined) return;
        await new FailedDeliveries(this.#redis, options.prefix).record(item.data, error);
      },
    });
    if (options.remoteDelivery) this.#mailbox.addRemoteWorker(options.remoteDelivery);
  }

  /** Opens a reply to a target. Blocks pushed to it are delivered in order after every earlier reply's. */
  open(replyId: string, target: ReplyTarget, options: ReplyOpenOptions = {}): ReplyStream {
    const key = replyTargetKey(target);
    // Delivered by this process when it can: a push claims an idle target for its own delivery (or for the
    // delivery of the thread that delivers for this one).
    const drainHere = this.#deliversTo(target) || this.#o.remoteDelivery !== undefined;
    const once = options.once ? { id: replyId, ttlSeconds: ONCE_TTL_SECONDS } : undefined;
    return new OpenReply(replyId, target, options, {
      capabilities: this.#o.capabilitiesOf(target.channel) ?? { textLimit: 4000 },
      // Named, not spread: `{ ...push, drainHere }` made a hidden class per push (the push options come in
      // several shapes), and the mailbox's reads of them missed their inline caches every time.
      push: (items, push) =>
        this.#mailbox.push(key, items, { fence: push.fence, note: push.note, drainHere, once }),
      pushPreview: async (id, item) => {
        await this.#previews.markLatest(item.preview, id);
        await this.#mailbox.push(key, [{ id, data: { ...item, kind: "preview" } }], {
          fence: options.fence,
          drainHere,
        });
      },
      waiter: () => this.#waiter(replyId),
      until: (waiter, signal) => this.#until(replyId, waiter, signal),
      settled: (signal) => this.settled(replyId, signal),
    });
  }

  /**
   * Deletes the live preview a run left on screen when it ended without its reply (interrupted and not
   * resumed): the close of its previews, queued behind whatever the run queued. Nothing when none is left.
   */
  async closeLeftPreview(runId: string): Promise<void> {
    const target = await this.#previews.leftAt(runId);
    if (!target) return;
    const preview = { key: runId, resumed: true };
    // Once: a finalize repeated after a crash (or by the run's next hand-out) deletes it once.
    await this.open(`${runId}.closed`, target, { runId, preview, once: true }).end();
  }

  // Whether this process delivers to the target's channel account (a push may then drain it here).
  #deliversTo(target: ReplyTarget): boolean {
    return this.#adapterOf?.(target.channel, target.accountId) !== undefined;
  }

  /**
   * The settlement of a reply: its counts once settled (nothing left to deliver), else `settled` false
   * with the failures so far (total and delivered are 0 until then).
   */
  async status(replyId: string): Promise<ReplySettlement & { settled: boolean }> {
    return this.#mailbox.groupStatus(replyId);
  }

  /** Resolves when the reply has ended and every segment is delivered or failed for good (`signal`: see `ReplyStream.settled`). */
  async settled(replyId: string, signal?: StopSignal): Promise<ReplySettlement> {
    // Registered before checking, so a settle that lands in between still wakes us.
    const waiter = await this.#waiter(replyId);
    const s = await this.status(replyId).catch((error: unknown) => {
      waiter.cancel();
      throw error;
    });
    if (!s.settled) return this.#until(replyId, waiter, signal);
    waiter.cancel();
    return { total: s.total, delivered: s.delivered, failed: s.failed };
  }

  // A wait for a reply's settlement, registered (subscribed first) before the step that may settle it.
  async #waiter(replyId: string): Promise<SettleWaiter> {
    await this.#subscribe();
    let wake: (settlement: ReplySettlement) => void = () => {};
    const woke = new Promise<ReplySettlement>((resolve) => {
      wake = resolve;
    });
    // The reply's first wait here: the delivering thread (with `settleRelay`) is told of it, and of its end
    // (the last wait cancelled, or woken other than by that thread).
    const known = this.#waiters.get(replyId);
    const set = known ?? new Set();
    set.add(wake);
    this.#waiters.set(replyId, set);
    if (!known) this.#o.settleRelay?.waiting(replyId);
    const cancel = () => {
      set.delete(wake);
      if (set.size > 0 || this.#waiters.get(replyId) !== set) return;
      this.#waiters.delete(replyId);
      this.#o.settleRelay?.done(replyId);
    };
    return { woke, cancel };
  }

  /** A reply's settlement, told by the thread that delivered it (see `SettleRelay`): wakes its waits here. */
  settledElsewhere(replyId: string, settlement: ReplySettlement): void {
    this.#wakerOf(replyId, true)?.(settlement);
  }

  /** Another thread waits for `replyId` (its `SettleRelay`): this dispatcher's delivery tells it the settlement. */
  waitElsewhere(replyId: string, tell: (settlement: ReplySettlement) => void): void {
    this.#elsewhere.add(replyId, tell);
  }

  /** That thread no longer waits for `replyId` (its settlement came otherwise, or it ended). */
  stopWaitingElsewhere(replyId: string, tell: (settlement: ReplySettlement) => void): void {
    this.#elsewhere.remove(replyId, tell);
  }

  /** How many replies other threads wait here to be told the settlement of. */
  get waitingElsewhere(): number {
    return this.#elsewhere.size;
  }

  // Belt and braces: a lost announcement only delays us (the status is read after a while, backing
  // off, so a slow delivery is not polled hard).
  async #until(replyId: string, waiter: SettleWaiter, signal?: StopSignal): Promise<ReplySettlement> {
    for (let fallbackMs = 2_000; ; fallbackMs = Math.min(fallbackMs * 2, 10_000)) {
      let timer: NodeJS.Timeout | undefined;
      let onAbort = () => {};
      // Given up before this wait began, it does not wait (a listener added then is never called); a
      // settlement already announced still wins.
      const announced = await Promise.race([
        waiter.woke,
        signal?.aborted
          ? undefined
          : new Promise<undefined>((resolve) => {
              timer = setTimeout(() => resolve(undefined), fallbackMs).unref();
              onAbort = () => resolve(undefined);
              signal?.addEventListener("abort", onAbort, { once: true });
            }),
      ]);
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (announced) return announced;
      // Given up: no more status reads for a reply nobody waits for.
      if (signal?.aborted) {
        waiter.cancel();
        throw signal.reason;
      }
      const s = await this.status(replyId);
      if (s.settled) {
        waiter.cancel();
        return { total: s.total, delivered: s.delivered, failed: s.failed };
      }
    }
  }

  // Wakes every waiter of this process for a reply's settlement, if any waits (`told`: by the delivering
  // thread, which then needs no word that the waits ended).
  #wakerOf(replyId: string, told = false): ((status: ReplySettlement) => void) | undefined {
    const set = this.#waiters.get(replyId);
    if (!set) return undefined;
    return ({ total, delivered, failed }) => {
      if (this.#waiters.get(replyId) === set) {
        this.#waiters.delete(replyId);
        if (!told) this.#o.settleRelay?.done(replyId);
      }
      for (const wake of set) wake({ total, delivered, failed });
    };
  }

  async #subscribe(): Promise<void> {
    this.#subscribed ??= (async () => {
      const subscriber = createRedis(this.#o.redisUrl);
      this.#subscriber = subscriber;
      subscriber.on("message", (_channel: string, message: string) => {
        const announced = OrderedMailbox.parseGroupSettled(message);
        if (announced) this.#wakerOf(announced.group)?.(announced.status);
      });
      await subscriber.subscribe(this.#mailbox.groupChannel);
    })();
    try {
      await this.#subscribed;
    } catch (error) {
      this.#subscribed = undefined;
      throw error;
    }
  }

  /**
   * Starts delivering in this process through the given adapters, at most
   * `concurrency` reply targets at once.
   */
  startDelivery(
    adapterOf: (channel: string, accountId: string) => ChannelAdapter | undefined,
    options: { concurrency?: number; shared?: boolean } = {},
  ): MailboxWorker {
    const sendTimeoutMs = this.#o.sendTimeoutMs ?? 10_000;
    // A segment taking over a live preview tries the edit in the first half of its tries at most.
    const editTries = Math.max(1, Math.floor((this.#o.maxAttempts ?? 8) / 2));
    this.#adapterOf = adapterOf;
    // Only when other threads push for it: each change of its slots is then published.
    this.#room = options.shared ? new WorkerRoom() : undefined;
    return this.#mailbox.startWorker(
      async (item, ctx) => {
        // An end marker only settles its reply, in its ack: no platform, no adapter.
        if (item.data.kind === "end") return;
        const { target } = item.data;
        const adapter = adapterOf(target.channel, target.accountId);
        if (!adapter)
          throw new Error(`no adapter for channel "${target.channel}" runs in this delivery process`);
        // Only items of a run with a live preview need its I/O.
        const io = (): PreviewIo => ({
          adapter,
          target,
          signal: ctx.signal,
          gate: () => this.#gate(adapter, target, ctx, "delivery.before-preview"),
          send: (segment) => this.#sendOnce(adapter, item.data, segment, ctx, sendTimeoutMs),
          log: this.#o.logger.child(segmentLogFields(item.data)),
          lastEditTry: ctx.attempt >= editTries,
        });
        if (item.data.kind !== undefined) return this.#deliverPreview(item.id, item.data, io());
        if (this.#expired(item.data)) {
          // Not sent (too old): counted as failed.
          ctx.countAsFailed();
          return this.#expire(item.data, ctx.key);
        }
        const segment = await segmentToSend(item.data, adapter, this.#o.outbox, this.#o.logger);
        // The last check before the platform write: a process frozen past its lease stops in the gate.
        await this.#gate(adapter, target, ctx, "delivery.before-send");
        const { preview } = item.data;
        // A file cannot be edited into a preview: the preview is then removed at the reply's end.
        if (!(preview && !segment.attachment && (await this.#previews.takeOver(preview, segment, io()))))
          await this.#sendOrNote(adapter, item.data, segment, ctx, sendTimeoutMs);
        failpoint("delivery.after-send");
      },
      { concurrency: options.concurrency ?? 50, room: this.#room },
    );
  }

  /**
   * This process's delivery room, for another thread's dispatcher to claim targets for it (its
   * `remoteDelivery`, whose claims come back through `adopt`); undefined before `startDelivery`, or when
   * it was not `shared`.
   */
  get deliveryRoom(): SharedArrayBuffer | undefined {
    return this.#room?.buffer;
  }

  /** Delivers a target a push on another thread claimed for this dispatcher's delivery (see `deliveryRoom`). */
  adopt(claim: ClaimedKey): void {
    this.#mailbox.adopt(claim);
  }

  /** A thread that claimed through `deliveryRoom` ended: the slots it held there (its `holds` cell) are free. */
  forgetHolds(holds: SharedArrayBuffer): void {
    this.#room?.forget(holds);
  }

  // The target's pacing and the account's rate, then the last check before the platform write: a process
  // frozen past its lease (a failpoint freezes it right before) stops here.
  async #gate(
    adapter: ChannelAdapter,
    target: ReplyTarget,
    ctx: { key: string; assertLease: () => void },
    point: FailpointName,
  ): Promise<void> {
    // Skipped, not awaited, when off (a self-hosted or test platform is not paced).
    const interval = sendInterval(adapter, target);
    const perSecond = adapter.capabilities.maxSendsPerSecond ?? 0;
    if (interval > 0 || perSecond > 0) await this.#paceAndThrottle(target, interval, perSecond);
    failpoint(point);
    ctx.assertLease();
  }

  // A live preview's text (skipped when stale: a newer one is queued, or it waited past the age limit) or
  // the end of a run's previews.
  async #deliverPreview(itemId: string, data: SegmentItem, io: PreviewIo): Promise<void> {
    const { preview, kind } = data;
    if (preview === undefined) return;
    if (kind === "close") return this.#previews.close(preview, io);
    if (this.#expired(data)) return;
    await this.#previews.show(preview, itemId, data, io);
    failpoint("delivery.after-preview");
  }

  // A segment the platform refuses for good (a file too large for it or an image it cannot process, a text
  // it will not take) is not a silent gap in the answer: the chat gets a note in its place saying what did
  // not come and why. Where the chat refuses every message (the bot blocked, the chat gone) no note is tried:
  // the segment fails, as it does when the note is refused too.
  async #sendOrNote(
    adapter: ChannelAdapter,
    item: SegmentItem,
    segment: OutboundSegment,
    ctx: Pick<DrainContext, "onLost" | "key" | "assertLease">,
    sendTimeoutMs: number,
  ): Promise<void> {
    const file = segment.attachment;
    const timeoutMs = file ? uploadTimeoutMs(sendTimeoutMs, file.size) : sendTimeoutMs;
    try {
      await this.#sendOnce(adapter, item, segment, ctx, timeoutMs);
    } catch (error) {
      // Given up after two timeouts, it may have been posted: no note on top of it.
      if (!(error instanceof PermanentSendError) || error instanceof UnknownOutcomeError || error.chatRefuses)
        throw error;
      this.#o.logger.warn(
        { ...segmentLogFields(item), ...(file ? { filename: file.filename } : {}), err: error.message },
        "the platform refused a segment; sending a note in its place",
      );
      // The platform's words on one line, briefly (Discord's can span lines of field errors).
      const said = error.message.replace(/\s+/g, " ").trim();
      const why = `refused by the platform (${said.length > 200 ? `${said.slice(0, 200)}…` : said})`;
      const text = file
        ? attachmentFallbackText(file, segment.text, why)
        : `[a part of this answer could not be sent: ${why}]`;
      await this.#gate(adapter, item.target, ctx, "delivery.before-send");
      await this.#sendOnce(
        adapter,
        item,
        { replyId: segment.replyId, index: segment.index, text },
        ctx,
        sendTimeoutMs,
      );
    }
  }

  // Never race the send: abort it on timeout and wait for it to settle, so it cannot land after the next one.
  // A send that timed out may still have reached the platform (unknown outcome): it is retried once, not more.
  async #sendOnce(
    adapter: ChannelAdapter,
    item: SegmentItem,
    segment: OutboundSegment,
    lease: Pick<DrainContext, "onLost">,
    sendTimeoutMs: number,
  ): Promise<SendResult> {
    const { target } = item;
    const controller = new AbortController();
    const unlisten = lease.onLost(() => controller.abort(new Error("delivery lease lost")));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`send timed out after ${sendTimeoutMs} ms`));
    }, sendTimeoutMs);
    try {
      return await adapter.send(segment, target, { signal: controller.signal });
    } catch (error) {
      if (timedOut) await this.#unknownOutcome(item, error);
      throw error;
    } finally {
      clearTimeout(timer);
      unlisten();
      await this.#paceFrom(adapter, target).catch(() => {});
    }
  }

  // The next send to a paced target waits from this send's end, not only from its start: a send that reached
  // the platform late (a slow network, a loaded machine) never arrives closer than the interval to the next.
  async #paceFrom(adapter: ChannelAdapter, target: ReplyTarget): Promise<void> {
    const interval = sendInterval(adapter, target);
    if (interval > 0)
      await this.#redis.set(this.#lastSendKey(target), Date.now(), "PX", Math.max(interval * 2, 1000));
  }

  async #unknownOutcome(segment: SegmentItem, error: unknown): Promise<never> {
    const key = `${this.#o.prefix}:reply:${segment.replyId}:unknown`;
    const [[, first]] = (await this.#redis
      .multi()
      // A preview's send is not the segment of the same index (which edits it): counted apart.
      .sadd(key, segment.kind === "preview" ? `p${segment.index}` : segment.index)
      .expire(key, REPLY_TTL_SECONDS)
      .incr(`${this.#o.prefix}:stats:unknown-send-outcomes`)
      .exec()) as [[null, number], ...unknown[]];
    const log = { ...segmentLogFields(segment), err: error };
    if (first === 1) {
      this.#o.logger.warn(log, "send timed out: outcome unknown (it may have been posted); retrying it once");
      throw error;
    }
    this.#o.logger.error(log, "send timed out twice: outcome unknown; not retrying it again");
    throw new UnknownOutcomeError(`send of segment ${segment.index} timed out twice; outcome unknown`, {
      cause: error,
    });
  }

  #expired(segment: SegmentItem): boolean {
    const maxAgeMs = this.#o.maxAgeMs ?? 30 * 60_000;
    return segment.at !== undefined && Date.now() - segment.at > maxAgeMs;
  }

  // A stale answer is worse than none: it is recorded as failed (expired) and the chat is told once, in order.
  async #expire(segment: SegmentItem, key: string): Promise<void> {
    const maxAgeMs = this.#o.maxAgeMs ?? 30 * 60_000;
    const { replyId, target } = segment;
    const [[, first]] = (await this.#redis
      .multi()
      .set(`${this.#o.prefix}:reply-expired-notice:${key}`, replyId, "PX", maxAgeMs, "NX")
      .incr(`${this.#o.prefix}:stats:expired-segments`)
      .exec()) as [[null, string | null], ...unknown[]];
    // Kept with the failed deliveries: the operator sees what was dropped and can still send it.
    await new FailedDeliveries(this.#redis, this.#o.prefix).record(
      segment,
      new Error(
        `expired: older than ${maxAgeMs < 1000 ? `${maxAgeMs} ms` : `${Math.round(maxAgeMs / 1000)} s`} when its turn came`,
      ),
      "expired",
    );
    if (first !== "OK") return;
    this.#o.logger.warn(
      { ...segmentLogFields(segment), maxAgeMs },
      "reply segment expired before it could be sent; not sending stale answers, telling the chat once",
    );
    const notice = `${replyId}.expired`;
    await this.#mailbox.push(key, [
      {
        id: groupEndId(notice, 0, 1),
        data: { replyId: notice, index: 0, text: EXPIRED_NOTICE, target, at: Date.now() },
      },
    ]);
  }

  /** How many segments expired unsent (older than `maxAgeMs` when their turn came), across every process. */
  async expiredSegments(): Promise<number> {
    return Number((await this.#redis.get(`${this.#o.prefix}:stats:expired-segments`)) ?? 0);
  }

  /** How many sends ended with an unknown outcome (timed out), across every process. */
  async unknownSendOutcomes(): Promise<number> {
    return Number((await this.#redis.get(`${this.#o.prefix}:stats:unknown-send-outcomes`)) ?? 0);
  }

  #lastSendKey(target: ReplyTarget): string {
    return `${this.#o.prefix}:reply-last:${replyTargetKey(target)}`;
  }

  // Per-target pacing lives here, not in adapters: the drainer holds the target, so waiting here delays
  // only it. The target's interval and the account's cap (e.g. Telegram's ~30 messages/s per bot) are one
  // step in Redis (send-gate.lua), so they hold across processes at one round trip per platform write
  // (sends, and a live preview's edits and removal); a send's end is written too (#paceFrom).
  async #paceAndThrottle(target: ReplyTarget, intervalMs: number, perSecond: number): Promise<void> {
    for (;;) {
      const now = Date.now();
      const second = Math.floor(now / 1000);
      const rateKey = `${this.#o.prefix}:reply-rate:${target.channel}:${target.accountId}:${second}`;
      const wait = Number(
        await runScript(
          this.#redis,
          SEND_GATE,
          [this.#lastSendKey(target), rateKey],
          [now, intervalMs, perSecond, Math.max(intervalMs * 2, 1000)],
        ),
      );
      if (wait <= 0) return;
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** Resumes at once the reply targets this installation's dead previous process was delivering. */
  async reclaimDeadPredecessors(): Promise<string[]> {
    return this.#mailbox.reclaimDeadPredecessors();
  }

  async close(): Promise<void> {
    await this.#mailbox.close();
    this.#subscriber?.disconnect();
    if (this.#o.redis === undefined) this.#redis.disconnect();
  }
}

/** Least time between two sends to the target (0: not paced). */
function sendInterval(adapter: ChannelAdapter, target: ReplyTarget): number {
  return adapter.sendIntervalMs?.(target) ?? adapter.capabilities.minSendIntervalMs ?? 0;
}

// A settlement to this thread's waits and to other threads' (either may be missing).
function bothWaiters(
  here: ((settlement: ReplySettlement) => void) | undefined,
  elsewhere: ((settlement: ReplySettlement) => void) | undefined,
): ((settlement: ReplySettlement) => void) | undefined {
  if (!here || !elsewhere) return here ?? elsewhere;
  return (settlement) => {
    here(settlement);
    elsewhere(settlement);
  };
}
