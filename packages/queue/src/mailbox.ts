import { randomUUID } from "node:crypto";
import {
  failpoint,
  type HubLogger,
  isDeadProcess,
  PermanentSendError,
  PID_SPACE,
  PROCESS_START,
  type PushNote,
  RateLimitedError,
  type WriteFence,
  WriteFencedError,
} from "@hub/core";
import type { Redis } from "ioredis";
import { LeaseLoss } from "./lease-loss.js";
import { createRedis, runScript } from "./redis.js";
import {
  ACK_NEXT,
  CLAIM_NEXT,
  DELAY,
  FENCED_PUSH,
  PROMOTE,
  PUSH,
  PUSH_ONCE,
  RECLAIM,
  RENEW,
  SWEEP,
} from "./scripts.js";
import { type WaitingKey, WaitingKeys } from "./waiting-keys.js";
import type { ClaimedKey, RemoteWorker, WorkerRoom } from "./worker-room.js";

/** One item of a mailbox: a caller-chosen id (unique within the key) and its data. */
export interface MailboxItem<T> {
  id: string;
  data: T;
}

/** What a handler gets besides the item. */
export interface DrainContext {
  /** The mailbox key (a reply target, a session) being drained. */
  key: string;
  /** 1 on the first try of this item. */
  attempt: number;
  /** Aborted when this drainer lost its lease; stop and do not write anything more. Made when read. */
  readonly signal: AbortSignal;
  /**
   * Calls `listener` once when this drainer loses its lease (at once if it has); returns what stops the
   * listening. Cheaper than listening on `signal`, which is made only when read.
   */
  onLost(listener: (reason: unknown) => void): () => void;
  /**
   * Throws `LeaseExpiredError` (and aborts `signal`) unless the lease is still
   * this drainer's by the time of its last confirmed renewal, with `marginMs`
   * (default a third of the lease) to spare. Call it right before a write to
   * the outside world: a process frozen past its lease wakes up here and sends nothing.
   */
  assertLease(marginMs?: number): void;
  /**
   * Counts the item as failed in its group (see `OrderedMailboxOptions.groups`) when the handler
   * returns: it is acked all the same (not retried), e.g. an item deliberately not handled.
   */
  countAsFailed(): void;
  /**
   * This item's ack, for a handler that runs it inside a Lua step of its own (the `ack_next` function
   * of commands/ack-next.lua, see `scriptWith`), so its last write and the ack are one step. The
   * handler reports what the step answered; the worker then goes on from there instead of acking.
   * Call it last (after `countAsFailed`), right before the step.
   */
  ackStep(): AckStep;
}

/** An item's ack for a handler's own step (see `DrainContext.ackStep`). */
export interface AckStep {
  /** `ack_next`'s keys and arguments (see commands/ack-next.lua). */
  keys: string[];
  args: Array<string | number>;
  /** The step ran the ack: what `ack_next` returned. */
  acked(answer: unknown): void;
  /** The step found the lease taken (`ack_next`'s LOST): another drainer has the key. */
  lost(): void;
}

/** The drainer's lease may have passed to another drainer: it must not write anything more. */
export class LeaseExpiredError extends Error {
  constructor(key: string) {
    super(`the mailbox lease on ${key} may have expired; not writing`);
    this.name = "LeaseExpiredError";
  }
}

/** Handles one item. Throw `RateLimitedError` to delay the key, `PermanentSendError` to give the item up. */
export type MailboxHandler<T> = (item: MailboxItem<T>, ctx: DrainContext) => Promise<void>;

/** How far a group of items (see `OrderedMailboxOptions.groups`) is acked. */
export interface GroupStatus {
  /** Items in the group (0 until it is settled). */
  total: number;
  /** Acked as handled (0 until it is settled). */
  delivered: number;
  /** Acked as failed (given up, or counted as failed by the handler), so far. */
  failed: number;
  /** The group's last item is acked, and with it every earlier one. */
  settled: boolean;
}

/**
 * The group an item counts toward (see `OrderedMailboxOptions.groups`): item ids are
 * `<group>#<tag>`, and `<group>#<tag>$<total>` for the item that ends the group at `total` items.
 */
export interface ItemGroup {
  group: string;
  /** The tag is all digits: one of the group's `total` items, counted when it fails. */
  segment: boolean;
  /** Set on the group's last item: how many items (tags all digits) the group has. */
  total: number | undefined;
}

const DIGITS = /^\d+$/;

/** The group an item id counts toward, if any (see `ItemGroup`). */
export function groupOfItem(id: string): ItemGroup | undefined {
  const cut = id.lastIndexOf("#");
  if (cut <= 0) return undefined;
  let tag = id.slice(cut + 1);
  let total: number | undefined;
  const end = tag.indexOf("$");
  if (end >= 0) {
    const count = tag.slice(end + 1);
    if (!DIGITS.test(count)) return undefined;
    total = Number(count);
    tag = tag.slice(0, end);
  }
  const segment = DIGITS.test(tag);
  if (tag === "" || (!segment && total === undefined)) return undefined;
  return { group: id.slice(0, cut), segment, total };
}

/** The id of the item that ends a group at `total` items: a segment's (`tag` its index) or a marker's. */
export function groupEndId(group: string, tag: string | number, total: number): string {
  return `${group}#${tag}$${total}`;
}

/** The timing and identity knobs of a mailbox; any left undefined takes its default. */
export interface MailboxTuning {
  /** How long a drainer's ownership lasts without renewal. A dead drainer's key is picked up after this (default 30 s). */
  leaseMs?: number | undefined;
  /** How long a key may wait for a wake-up job before the sweeper adds one (default 5 s). */
  graceMs?: number | undefined;
  /** How often the sweeper looks (default 1 s). */
  sweepIntervalMs?: number | undefined;
  /**
   * Items a drainer handles from one key before it lets keys waiting for a drain slot go first
   * (default 32): it then hands the key back to the end of `ready`, but only when some key waits
   * there, so a busy key cannot hold a slot while others wait, and a lone key drains on. Small for
   * coarse items (a session lane's runs); large where a key's items belong together (a reply's
   * segments, which should not pause halfway behind other chats).
   */
  burst?: number | undefined;
  /**
   * How long a key this process's step claimed while every slot of its worker was busy waits for a
   * slot before it goes back to the ready list for any process (default 1 s, at most a sixth of the
   * lease; 0: a step claims only into a free slot). A key is claimed so only while slots have been
   * freeing up fast enough for its turn to come within half of that, and at most four per slot wait.
   */
  slotWaitMs?: number | undefined;
  /**
   * The hub installation (state directory) this process belongs to. Lease tokens
   * carry it with the pid, so a restart can end its dead predecessor's leases at once.
   */
  instanceId?: string | undefined;
}

/** Options of an ordered mailbox. */
export interface OrderedMailboxOptions<T> extends MailboxTuning {
  /** Mailbox name, e.g. `reply` or `runs`. */
  name: string;
  redisUrl: string;
  /**
   * A commands connection to share (left open by `close`): a process's parts then pipeline their
   * commands on one connection instead of holding one each. Without it, the mailbox opens its own. Its
   * blocking wait for ready keys always gets a connection of its own.
   */
  redis?: Redis | undefined;
  /** Key prefix of everything this mailbox stores (tests use their own). */
  prefix: string;
  /** Validates an item read back from Redis. */
  parse: (raw: unknown) => T;
  logger: HubLogger;
  /** Tries per item before it is given up (`onFailed`; default 8). */
  maxAttempts?: number | undefined;
  /** Called once for an item given up for good, before it is removed. */
  onFailed?: ((item: MailboxItem<T>, error: unknown, key: string) => Promise<void>) | undefined;
  /** Fields every log line about one item carries, e.g. its run's runId, sessionKey and channel. */
  logFields?: ((data: T) => Record<string, unknown>) | undefined;
  /**
   * Count items in groups (see `ItemGroup`): a group's items are pushed to one key, so they are acked
   * in order, and the ack of its last item (id `<group>#<tag>$<total>`, see `groupEndId`) settles it,
   * in the ack's own step: its counts are kept `ttlSeconds` for `groupStatus` and published on
   * `groupChannel`. Only failures are counted on the way (given up, or `countAsFailed`), once each.
   * `waiterHere` names a listener of this process waiting for a group: its settlement is then handed to
   * it from the ack's answer instead of published (nobody else waits for a reply its own run waits for).
   */
  groups?:
    | {
        ttlSeconds: number;
        waiterHere?: ((group: string) => ((status: GroupStatus) => void) | undefined) | undefined;
      }
    | undefined;
}

/** An ordered mailbox's options with every default applied. */
type ResolvedOptions<T> = Required<
  Omit<OrderedMailboxOptions<T>, "onFailed" | "logFields" | "groups" | "redis">
> &
  Pick<OrderedMailboxOptions<T>, "onFailed" | "logFields" | "groups">;

/** A running drain worker; close it to stop taking new wake-ups. */
export interface MailboxWorker {
  /** True from its start until it began closing (or its loop taking wake-ups ended): it takes work. */
  running(): boolean;
  close(): Promise<void>;
}

/** Separates an item's id from its JSON in the stored list entry (`<id>|<JSON>`). */
export const SEP = "|";

/**
 * The per-key Redis structures of a mailbox: its items (`q`), its drainer's lease (`own`), its delay
 * marker (`nb`), its head item's attempts (`att`), and (per group, not per key) a group's failures, then
 * its settlement (`g`).
 */
export type MailboxKeyKind = "q" | "own" | "nb" | "att" | "g" | "once";

// A settled group's counts as its record, its announcement and a settling ack give them: "<total>|<delivered>|<failed>".
function settledCounts(counts: string): GroupStatus {
  const [total, delivered, failed] = counts.split(SEP).map(Number) as [number, number, number];
  return { total, delivered, failed, settled: true };
}

/** Where everything of one mailbox lives in Redis: `<prefix>:mb:<name>`. */
export function mailboxBase(prefix: string, name: string): string {
  return `${prefix}:mb:${name}`;
}

/** The Redis key of one per-key structure of a mailbox. */
export function mailboxKeyName(base: string, kind: MailboxKeyKind, key: string): string {
  return `${base}:${kind}:${key}`;
}

/** A worker of this process: its drains in flight (its slots) and how it handles items. */
interface LocalWorker<T> {
  active: Set<Promise<void>>;
  concurrency: number;
  handler: MailboxHandler<T>;
  closing(): boolean;
  /** Keys wait on the ready list for this worker's slots: they go first (no claims here meanwhile). */
  readyFirst: boolean;
  /** Keys claimed here while every slot was busy: they take the slots that free up first. */
  waiting: WaitingKeys;
  /** How long a drain holds a slot, recently (a moving average, ms; unknown before one ended): how soon slots free up. */
  drainMs: number | undefined;
  /** When each drain in flight started. */
  started: Map<Promise<void>, number>;
  /** Its room as other threads see it (see `WorkerRoom`), when they may claim keys for it. */
  room: WorkerRoom | undefined;
}

/** A drain slot held for a step that may claim a key for this process (see `reserveDrainHere`). */
export interface DrainHereSlot {
  /** The lease token the step claimed the key with. */
  token: string;
  /**
   * Drains the key the step claimed, from its head item (handed out as attempt 1); for a worker on another
   * thread (`remote`), hands it over with `carry` (see `ClaimedKey`).
   */
  start(key: string, head: string, claimedAt: number, carry?: unknown): void;
  /** A slot of a worker on another thread of this process (see `addRemoteWorker`). */
  remote: boolean;
  /** Frees the slot when the step claimed nothing (no effect after `start`). */
  cancel(): void;
  /** Every slot is busy: a key the step claims waits for one (see `MailboxTuning.slotWaitMs`). */
  waits: boolean;
}

/** An item handed to its handler: its context, and what the handler did with the item. */
interface HandOut {
  ctx: DrainContext;
  /** Counted as failed (see `DrainContext.countAsFailed`). */
  failed: boolean;
  /** Acked in the handler's own step (see `DrainContext.ackStep`): the next item, or the lease lost. */
  acked: { next: [string, number] | null } | "lost" | undefined;
}

/** A drainer's hold on one key: lost when renewal fails, confirmed up to a time by each renewal. */
interface DrainLease {
  loss: LeaseLoss;
  confirmedUntil: number;
  confirm(sentAt: number): void;
  assert(marginMs?: number): void;
  release(): void;
}

/**
 * A per-key ordered mailbox on plain Redis, one drainer per key at a time (the
 * "ready list, heartbeat, reaper" design measured in shared/notes/ordered-delivery.md):
 * a push that owes a drain puts the key on the `ready` list in its own step, and
 * drain workers pop it (BLMPOP, as many keys as they have free slots). A
 * drainer already running takes later pushes with it, so a busy key costs no
 * wake-up at all; claiming returns the first item and acking returns the next,
 * so one item costs two scripts (its push and its ack). A push (or admission's
 * step) from a process whose own worker has a free slot claims an idle key in
 * that step instead and the worker drains it at once: no wake-up, no claim.
 *
 * Why items of one key are handled strictly in order, across processes:
 * - items are appended to one Redis list per key, and only its head is handled;
 * - a drainer must hold the key's owner lease (CAS in Lua) to handle the head,
 *   and re-checks it before every item; it pops the head only after handling it;
 * - "is a drain owed" is decided in the same Lua step as the push, and a
 *   drainer may only stop in a Lua step that sees the list empty, so a push
 *   racing with a finishing drainer either is seen by it or wakes a new one;
 * - a crashed drainer's lease expires and the sweeper wakes the key again;
 *   the item in flight at the crash is handled again (the only duplicate);
 * - every hand-out of an item counts as an attempt before its handler runs
 *   (see commands/claim-next.lua), so a poison item that crashes its drainer
 *   still runs out of attempts;
 * - the lease is renewed by a heartbeat every third of it (and by an ack when
 *   the heartbeat has fallen behind); `assertLease` trusts only renewals Redis
 *   confirmed.
 */
export class OrderedMailbox<T> {
  readonly #o: ResolvedOptions<T>;
  readonly #redis: Redis;
  /** Whether `#redis` is ours to close (not a shared connection). */
  readonly #ownsRedis: boolean;
  readonly #base: string;
  // How long a key claimed here waits for a slot: within a sixth of the lease, so a key that waited still
  // holds its lease, with a third of it to spare, until its drain's first renewal.
  readonly #slotWaitMs: number;
  readonly #timers = new Set<NodeJS.Timeout>();
  /** This process's running workers, which a push may hand its key to (see `push`'s `drainHere`). */
  readonly #locals = new Set<LocalWorker<T>>();
  /** Workers on other threads of this process that this mailbox's steps may claim keys for. */
  readonly #remotes: RemoteWorker[] = [];
  /** Where the next search of #remotes starts, for a step with no key to prefer one by. */
  #nextRemote = 0;

  constructor(options: OrderedMailboxOptions<T>) {
    this.#o = {
      ...options,
      leaseMs: options.leaseMs ?? 30_000,
      graceMs: options.graceMs ?? 5_000,
      sweepIntervalMs: options.sweepIntervalMs ?? 1_000,
      burst: options.burst ?? 32,
      maxAttempts: options.maxAttempts ?? 8,
      slotWaitMs: options.slotWaitMs ?? 1_000,
      instanceId: options.instanceId ?? "hub",
    };
    this.#base = mailboxBase(options.prefix, options.name);
    this.#slotWaitMs = Math.min(this.#o.slotWaitMs, this.#o.leaseMs / 6);
    this.#ownsRedis = options.redis === undefined;
    this.#redis = options.redis ?? createRedis(options.redisUrl);
  }

  /**
   * A worker on another thread of this process (this mailbox's own workers come first): a step of this
   * thread's (a push with `drainHere`, admission's) may claim an idle key for it while it has room (see
   * `WorkerRoom`), and hands the claimed key to it (`claimed`, whose thread calls `adopt`).
   */
  addRemoteWorker(remote: RemoteWorker): void {
    this.#remotes.push(remote);
  }

  #k(kind: MailboxKeyKind, key: string): string {
    return mailboxKeyName(this.#base, kind, key);
  }

  /**
   * Appends items to a key's mailbox, in order, and wakes a drainer if none is
   * owed yet, in one step. Resolves once the items are durably queued in Redis.
   * A `note` (only with a `fence`) is written in the same step. With `once`, the items are queued at
   * most once per its id: resolves false, nothing queued, when a push with that id was made before.
   */
  async push(
    key: string,
    items: ReadonlyArray<MailboxItem<T>>,
    options: {
      fence?: WriteFence | undefined;
      note?: PushNote | undefined;
      /**
       * This process may drain the key itself: when nobody owes it a drain and one of this process's
       * workers has a free slot, the push claims the key in its own step and that worker drains it at
       * once (no wake-up, no separate claim: two round trips less before the first item is handled).
       */
      drainHere?: boolean | undefined;
      /** Queued at most once per `id` within `ttlSeconds` (not with a fence). */
      once?: { id: string; ttlSeconds: number } | undefined;
    } = {},
  ): Promise<boolean> {
    if (items.length === 0) return true;
    const encoded = items.map((item) => this.encode(item));
    const { fence, note, once } = options;
    if (note && !fence) throw new Error("a note is written only with a fenced push");
    if (once && fence) throw new Error("a push made once is not fenced");
    if (note && "value" in note && !(note.ttlSeconds >= 1))
      throw new Error("a value note needs a TTL of 1 s or more");
    const own = this.#k("own", key);
    const keys = [this.#k("q", key), `${this.#base}:sched`, `${this.#base}:ready`, own, this.#k("att", key)];
    const here = options.drainHere ? this.reserveDrainHere(key) : undefined;
    try {
      const now = Date.now();
      const owe = [now, this.#o.graceMs, key, here?.token ?? "", this.#o.leaseMs];
      const noteArgs =
        note === undefined ? [] : "value" in note ? [note.value] : Object.entries(note.fields).flat();
      // The wake-up (the key put on `ready`), or this process's claim, is part of the push's own step.
      const pushed = await (fence
        ? runScript(this.#redis, FENCED_PUSH, note ? [...keys, fence.key, note.key] : [...keys, fence.key], [
            ...owe,
            fence.field,
            fence.value,
            note && "value" in note ? note.ttlSeconds : 0,
            noteArgs.length,
            ...noteArgs,
            ...encoded,
          ]).catch((error: unknown) => {
            if (error instanceof Error && error.message.includes("FENCED"))
              throw new WriteFencedError(`push to mailbox ${this.#o.name}`);
            throw error;
          })
        : once
          ? runScript(
              this.#redis,
              PUSH_ONCE,
              [...keys, this.#k("once", once.id)],
              [...owe, once.ttlSeconds, ...encoded],
            )
          : runScript(this.#redis, PUSH, keys, [...owe, ...encoded]));
      if (pushed === 1) this.wokeOnReady();
      if (typeof pushed === "string" && here) {
        failpoint("mailbox.after-claim-here");
        here.start(key, pushed, now);
      }
      return pushed !== -1;
    } finally {
      here?.cancel();
    }
  }

  /**
   * A drain slot of one of this process's workers, held for a step that may claim a key for this
   * process (a push with `drainHere`, or admission's own step; see owe-drain.lua): pass its `token`
   * to the step, then `start` the drain with the head item the step claimed, or `cancel` (a no-op
   * after `start`). With every slot busy, a place among the keys waiting for one (`waits`; see
   * `slotWaitMs`). Else a free slot of a worker on another thread (see `addRemoteWorker`; `key`, when
   * given, keeps each key with one of them while it has room). Undefined when there is none, or keys
   * wait on the ready list for this process. A step that then woke its key through the ready list says
   * so (`wokeOnReady`).
   */
  reserveDrainHere(key?: string): DrainHereSlot | undefined {
    const worker = this.#freeWorker();
    if (worker) return this.#reserveSlot(worker);
    const roomy = [...this.#locals].find((w) => !w.closing() && !w.readyFirst && this.#slotSoon(w));
    // No room at all: the step wakes the key through the ready list (see `wokeOnReady`).
    if (!roomy) return this.#reserveRemote(key);
    const release = roomy.waiting.reserve();
    const token = this.#tokenFor();
    return {
      token,
      waits: true,
      remote: false,
      start: (key, head, claimedAt) => {
        release();
        this.#waitOrDrain(roomy, { key, token, claimedAt, head });
      },
      cancel: release,
    };
  }

  // A free slot of a worker on another thread, if one has one: the key the step claims is handed to it.
  // `key` starts the search at the same worker each time (its copies of the key's state stay useful there).
  #reserveRemote(key: string | undefined): DrainHereSlot | undefined {
    const count = this.#remotes.length;
    if (count === 0) return undefined;
    const first = key === undefined ? this.#nextRemote++ : hashOf(key);
    // A free slot of any of them first; else a place to wait for one that frees up soon (a place is taken
    // only where it is used).
    let chosen: RemoteWorker | undefined;
    let kind: "slot" | "wait" | undefined;
    for (const slotOnly of [true, false])
      for (let i = 0; i < count && !kind; i++) {
        chosen = this.#remotes[(first + i) % count] as RemoteWorker;
        kind = chosen.room.reserve(slotOnly);
      }
    if (!chosen || !kind) return undefined;
    const waits = kind === "wait";
    let held = !waits;
    const token = this.#tokenFor();
    return {
      token,
      waits,
      remote: true,
      // Its thread gives the slot back once it has taken the key (see `adopt`).
      start: (key, head, claimedAt, carry) => {
        if (held) chosen.room.handedOver();
        held = false;
        chosen.claimed({ key, token, claimedAt, head, waits, ...(carry === undefined ? {} : { carry }) });
      },
      cancel: () => {
        if (held) chosen.room.release();
        held = false;
      },
    };
  }

  /**
   * A key a step on another thread claimed for this thread's worker (see `remoteWorker`): drained by it,
   * waiting for a slot if every one is busy now, or handed back to the ready list if none is open. Gives
   * back the slot that step held.
   */
  adopt(claim: ClaimedKey): void {
    const local = [...this.#locals].find((w) => !w.closing() && w.room);
    const { key, token, claimedAt, head } = claim;
    const holding = !claim.waits;
    // Taken first (its slot counted in the room), then the step's hold given back: never both free at once.
    if (local) this.#waitOrDrain(local, { key, token, claimedAt, head }, holding);
    else this.#handBack(claim);
    if (holding) local?.room?.taken();
  }

  // A worker's slots less those other threads hold for keys they are claiming for it (see WorkerRoom).
  #capacity(local: LocalWorker<T>): number {
    return local.concurrency - (local.room?.held() ?? 0);
  }

  // What other threads see of `local`'s room (see WorkerRoom); fewer free slots than it has is harmless. A
  // closing worker has none.
  #publishRoom(local: LocalWorker<T>): void {
    const { room } = local;
    if (!room) return;
    if (local.closing()) {
      room.publish(0, true);
      return;
    }
    const free = local.concurrency - local.active.size - local.waiting.size;
    room.publish(free, local.readyFirst, free > 0 || local.readyFirst ? 0 : this.#waitPlaces(local));
  }

  // How many more keys may wait for a slot of `local`: each would get one within half the slot wait at the
  // rate its slots have been freeing up (see #slotSoon), at most four per slot in all.
  #waitPlaces(local: LocalWorker<T>): number {
    const wait = this.#slotWaitMs;
    const { drainMs, waiting, concurrency } = local;
    if (drainMs === undefined || drainMs <= 0 || wait <= 0) return 0;
    const now = Date.now();
    let moving = 0;
    for (const at of local.started.values()) if (now - at < 3 * drainMs) moving++;
    const fit = Math.floor(((wait / 2) * moving) / drainMs) - waiting.size;
    return Math.max(0, Math.min(fit, 4 * concurrency - waiting.size));
  }

  // A free slot of `worker`, held until the step starts a drain in it or claimed nothing.
  #reserveSlot(worker: LocalWorker<T>): DrainHereSlot {
    // Held in the worker's slots until started or cancelled, so no two steps count on one slot.
    let free: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      free = resolve;
    });
    worker.active.add(held);
    this.#publishRoom(worker);
    const release = () => {
      worker.active.delete(held);
      free();
      this.#publishRoom(worker);
    };
    const token = this.#tokenFor();
    return {
      token,
      waits: false,
      remote: false,
      start: (key, head, claimedAt) => {
        release();
        this.#drainClaimedHere(worker, { key, token, claimedAt, head });
      },
      cancel: () => {
        release();
        this.#fillFromWaiting(worker);
      },
    };
  }

  // A worker of this process that may take a claimed key now: open, with a free slot, no ready keys waiting.
  #freeWorker(): LocalWorker<T> | undefined {
    for (const w of this.#locals)
      if (!w.closing() && !w.readyFirst && w.active.size < this.#capacity(w)) return w;
    return undefined;
  }

  // Whether a key claimed now would get a slot of `local` well within the slot wait, at the rate its slots
  // have been freeing up: under load from short drains, yes; behind slow ones (a model's turn), no, and
  // the key goes to the ready list, where another process with a free slot may take it at once. Only
  // drains not much older than the recent ones count as freeing slots (one far older may be a long turn).
  #slotSoon(local: LocalWorker<T>): boolean {
    return this.#waitPlaces(local) > 0;
  }

  /**
   * A step of this process put a key on the ready list (a wake-up, where it could not claim the key
   * here): this process's workers take ready keys before they claim more here, so no key claimed here
   * later goes before it.
   */
  wokeOnReady(): void {
    for (const local of this.#locals) {
      local.readyFirst = true;
      this.#publishRoom(local);
    }
  }

  // A key claimed to wait for a slot: drained at once if one freed up meanwhile (or handed back if the
  // worker began closing: see #drainClaimedHere), else it waits.
  // `holding`: a key claimed on another thread with a slot held for it here (counted in `#capacity` until taken).
  #waitOrDrain(local: LocalWorker<T>, waiting: WaitingKey, holding = false): void {
    if (local.closing() || local.active.size < this.#capacity(local) + (holding ? 1 : 0))
      this.#drainClaimedHere(local, waiting);
    else {
      local.waiting.add(waiting);
      this.#publishRoom(local);
    }
  }

  // Slots that freed up go to the keys claimed here that wait for one, longest waiting first.
  #fillFromWaiting(local: LocalWorker<T>): void {
    while (!local.closing() && local.active.size < this.#capacity(local)) {
      const waiting = local.waiting.next();
      if (!waiting) return;
      this.#drainClaimedHere(local, waiting);
    }
  }

  // A key a step claimed for this process: drained by that worker, or handed back to the ready list for any
  // worker when that worker began closing in between.
  #drainClaimedHere(local: LocalWorker<T>, waiting: WaitingKey) {
    const { key, token, claimedAt, head } = waiting;
    if (local.closing()) return this.#handBack(waiting);
    const own = this.#k("own", key);
    this.#track(local, key, async () => {
      await this.#drainClaimed(key, own, token, claimedAt, [head, 1], local.handler);
      return true;
    });
  }

  // A key claimed here and never handed to a handler goes back to the ready list, its claim undone (the
  // head's attempt with it). If this fails, the lease runs out and the sweep wakes the key.
  #handBack(waiting: WaitingKey): void {
    const { key, token } = waiting;
    this.wokeOnReady();
    const keys = [this.#k("own", key), `${this.#base}:sched`, `${this.#base}:ready`, this.#k("att", key)];
    runScript(this.#redis, RECLAIM, keys, [token, Date.now(), key, this.#o.graceMs]).catch(() => {});
  }

  /**
   * The Redis keys a push to `key` writes and the times it uses, for a caller that must push in the
   * same atomic step as its own writes (admission). Such a step owes the key a drain itself, as push.lua
   * does (see owe-drain.lua: a wake-up on `ready`, or a claim for this process with a token from
   * `reserveDrainHere`, which takes the lease `own` and writes the head's attempt to `att`).
   */
  pushKeys(key: string): {
    list: string;
    sched: string;
    ready: string;
    own: string;
    att: string;
    graceMs: number;
    leaseMs: number;
  } {
    return {
      list: this.#k("q", key),
      sched: `${this.#base}:sched`,
      ready: `${this.#base}:ready`,
      own: this.#k("own", key),
      att: this.#k("att", key),
      graceMs: this.#o.graceMs,
      leaseMs: this.#o.leaseMs,
    };
  }

  /** An item as the mailbox stores it (`<id>|<JSON>`). */
  encode(item: MailboxItem<T>): string {
    if (item.id.includes(SEP)) throw new Error(`mailbox item id must not contain "${SEP}"`);
    return `${item.id}${SEP}${JSON.stringify(item.data)}`;
  }

  /** True while a drainer holds the key's lease. */
  async hasDrainer(key: string): Promise<boolean> {
    return (await this.#redis.exists(this.#k("own", key))) === 1;
  }

  /** Every item of a key, its head first (unreadable ones left out: the drainer that reaches them drops them). */
  async items(key: string): Promise<Array<MailboxItem<T>>> {
    const raws = await this.#redis.lrange(this.#k("q", key), 0, -1);
    return raws.flatMap((raw) => this.#readable(raw) ?? []);
  }

  /** The item at a key's head (the one being handled, or next); undefined when none or unreadable. */
  async head(key: string): Promise<MailboxItem<T> | undefined> {
    const head = await this.#redis.lindex(this.#k("q", key), 0);
    return head === null ? undefined : this.#readable(head);
  }

  /** Items waiting (including the one being handled) for a key. */
  async depth(key: string): Promise<number> {
    return this.#redis.llen(this.#k("q", key));
  }

  // A delayed key waits in `delayed` first: promoted here when its delay ends; the sweep of any process
  // promotes it too (e.g. after we die).
  #promoteAfter(delayMs: number): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#promote().catch(() => {});
    }, delayMs);
    timer.unref();
    this.#timers.add(timer);
  }

  async #promote(): Promise<void> {
    const moved = await runScript(
      this.#redis,
      PROMOTE,
      [`${this.#base}:delayed`, `${this.#base}:ready`],
      [Date.now(), 100],
    );
    if (Number(moved) > 0) this.wokeOnReady();
  }

  /**
   * Starts draining keys in this process, at most `concurrency` keys at once: keys taken from the ready
   * list, and keys this process's own steps claimed while a slot was free (`push`'s `drainHere`,
   * `reserveDrainHere`).
   */
  startWorker(
    handler: MailboxHandler<T>,
    options: { concurrency: number; room?: WorkerRoom | undefined },
  ): MailboxWorker {
    const blocking = createRedis(this.#o.redisUrl);
    blocking.on("error", () => {});
    const active = new Set<Promise<void>>();
    let closing = false;
    const local: LocalWorker<T> = {
      active,
      concurrency: options.concurrency,
      handler,
      closing: () => closing,
      readyFirst: false,
      // Unknown until a drain has ended here: no key waits for a slot before.
      drainMs: undefined,
      started: new Map(),
      waiting: new WaitingKeys(this.#slotWaitMs, (waiting) => this.#handBack(waiting)),
      room: options.room,
    };
    this.#locals.add(local);
    this.#publishRoom(local);
    let loopEnded = false;
    const loop = this.#takeReady(blocking, local).finally(() => {
      loopEnded = true;
    });
    const sweep = setInterval(() => {
      this.#sweep().catch((error) =>
        this.#o.logger.warn({ err: error, mailbox: this.#o.name }, "mailbox sweep failed"),
      );
    }, this.#o.sweepIntervalMs);
    sweep.unref();
    return {
      running: () => !closing && !loopEnded,
      close: async () => {
        closing = true;
        // Other threads claim nothing more for it.
        this.#publishRoom(local);
        this.#locals.delete(local);
        local.waiting.handBackAll();
        clearInterval(sweep);
        blocking.disconnect();
        await loop;
        await Promise.all(active);
      },
    };
  }

  // Takes ready keys while a drain slot is free; each key is drained without holding up the others.
  async #takeReady(blocking: Redis, local: LocalWorker<T>): Promise<void> {
    const ready = `${this.#base}:ready`;
    const { active, handler } = local;
    while (!local.closing()) {
      // Slots other threads hold for keys they are claiming for this worker are theirs (see WorkerRoom).
      if (active.size >= this.#capacity(local)) {
        await (active.size > 0 ? Promise.race(active) : new Promise((r) => setTimeout(r, 5)));
        continue;
      }
      // As many ready keys as there are free slots in one round trip: under load, one key per round
      // trip would make the wake-ups queue up behind each other.
      let taken: [string, string[]] | null;
      const asked = this.#capacity(local) - active.size;
      try {
        taken = (await blocking.blmpop(1, 1, ready, "LEFT", "COUNT", asked)) as [string, string[]] | null;
      } catch (error) {
        if (local.closing()) return;
        this.#o.logger.warn({ err: error, mailbox: this.#o.name }, "mailbox worker cannot read its queue");
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      // Slots taken meanwhile by this process's own claims (reserveDrainHere): the keys that fit start now
      // (counted before anything else is awaited), the rest go back to the head of `ready`, in order, still
      // owed (the sweep covers a failure here). Once keys had to go back, this worker's slots go to the
      // ready list first until it gives fewer keys than asked for (it is empty): no claim here jumps
      // ahead of keys waiting there.
      const keys = taken?.[1] ?? [];
      const room = Math.max(0, this.#capacity(local) - active.size);
      for (const key of keys.slice(0, room)) this.#track(local, key, () => this.#drain(key, handler));
      local.readyFirst = keys.length > room || (local.readyFirst && keys.length >= asked);
      this.#publishRoom(local);
      if (keys.length > room)
        await this.#redis.lpush(ready, ...keys.slice(room).reverse()).catch((error: unknown) => {
          this.#o.logger.warn({ err: error, mailbox: this.#o.name }, "mailbox could not hand keys back");
        });
    }
  }

  // A drain counted in its worker's slots until it ends.
  #track(local: LocalWorker<T>, key: string, run: () => Promise<boolean>): void {
    const { active, started } = local;
    const startedAt = Date.now();
    const drain: Promise<void> = run()
      .then((drained) => {
        // A wake-up whose key another drainer had, or that was empty, says nothing about how long drains take.
        if (!drained) return;
        const took = Date.now() - startedAt;
        local.drainMs = local.drainMs === undefined ? took : 0.9 * local.drainMs + 0.1 * took;
      })
      .catch((error) =>
        this.#o.logger.error({ err: error, mailbox: this.#o.name, key }, "mailbox drain failed"),
      )
      .finally(() => {
        active.delete(drain);
        started.delete(drain);
        this.#fillFromWaiting(local);
        this.#publishRoom(local);
      });
    active.add(drain);
    started.set(drain, startedAt);
    this.#publishRoom(local);
  }

  async #sweep(): Promise<void> {
    // The keys come back already put on `ready`, in the sweep's own step.
    const woken = (await runScript(
      this.#redis,
      SWEEP,
      [`${this.#base}:sched`, `${this.#base}:ready`],
      [Date.now(), this.#o.graceMs, 100, this.#base],
    )) as string[];
    for (const key of woken)
      this.#o.logger.warn({ mailbox: this.#o.name, key }, "mailbox key had no live drainer; waking it");
    if (woken.length > 0) this.wokeOnReady();
    await this.#promote();
  }

  #tokenFor(): string {
    // The process's identity lets a restarted hub tell its dead predecessor's leases (reclaimDeadPredecessors).
    return [this.#o.instanceId, process.pid, PROCESS_START, PID_SPACE, randomUUID().slice(0, 12)].join("~");
  }

  // Claims a woken key and drains it; false when there was nothing to drain (see claim-next.lua).
  async #drain(key: string, handler: MailboxHandler<T>): Promise<boolean> {
    const token = this.#tokenFor();
    const own = this.#k("own", key);
    const claimedAt = Date.now();
    const claimed = (await runScript(
      this.#redis,
      CLAIM_NEXT,
      [own, this.#k("nb", key), `${this.#base}:sched`, this.#k("q", key), this.#k("att", key)],
      [token, this.#o.leaseMs, claimedAt, key],
    )) as [string, number] | number;
    // Another live drainer will see our items; a delayed key has its own wake-up; an empty key is done.
    if (typeof claimed === "number") return false;
    await this.#drainClaimed(key, own, token, claimedAt, claimed, handler);
    return true;
  }

  // Drains a key this process claimed (by claim-next, or by its own push), from its first item on.
  async #drainClaimed(
    key: string,
    own: string,
    token: string,
    claimedAt: number,
    first: [string, number],
    handler: MailboxHandler<T>,
  ): Promise<void> {
    const lease = this.#holdLease(key, own, token, claimedAt);
    try {
      await this.#drainItems(key, own, token, lease, handler, first);
    } catch (error) {
      if (error instanceof Error && error.message.includes("LOST")) {
        this.#o.logger.warn(
          { mailbox: this.#o.name, key },
          "mailbox drainer lost its lease; another drainer continues",
        );
        return;
      }
      // Redis failed under us: hand the key back for a retry soon (the sweeper covers us if this fails too).
      await this.#delay(key, own, token, 500).catch(() => {});
      throw error;
    } finally {
      lease.release();
    }
  }

  // Renews the lease in the background and remembers until when it is confirmed ours.
  #holdLease(key: string, own: string, token: string, claimedAt: number): DrainLease {
    const { leaseMs } = this.#o;
    const loss = new LeaseLoss();
    const lease: DrainLease = {
      loss,
      confirmedUntil: claimedAt + leaseMs,
      // A renewal counts from when it was sent, never from when its answer came back.
      confirm: (sentAt) => {
        lease.confirmedUntil = Math.max(lease.confirmedUntil, sentAt + leaseMs);
      },
      assert: (marginMs = leaseMs / 3) => {
        if (!loss.lost && Date.now() + marginMs <= lease.confirmedUntil) return;
        const error = new LeaseExpiredError(key);
        loss.lose(error);
        throw error;
      },
      release: () => clearInterval(heartbeat),
    };
    const heartbeat = setInterval(
      () => {
        const sentAt = Date.now();
        runScript(this.#redis, RENEW, [own, `${this.#base}:sched`], [token, leaseMs, sentAt, key])
          .then((ok) => {
            if (ok === 1) lease.confirm(sentAt);
            else loss.lose(new Error("mailbox lease lost"));
          })
          .catch(() => {});
      },
      Math.max(100, Math.floor(leaseMs / 3)),
    );
    return lease;
  }

  async #drainItems(
    key: string,
    own: string,
    token: string,
    lease: DrainLease,
    handler: MailboxHandler<T>,
    first: [string, number],
  ): Promise<void> {
    const { maxAttempts, burst } = this.#o;
    const drain = { key, own, token, lease };
    let next: [string, number] | null = first;
    let handled = 0;
    while (next !== null) {
      if (lease.loss.lost) return;
      const [head, attempt] = next;
      const item = this.#decode(head, key);
      if (!item) {
        next = await this.#ackNext(own, key, token, head.slice(0, head.indexOf(SEP)), lease, true);
        continue;
      }
      if (attempt > maxAttempts) {
        next = await this.#fail(
          item,
          new Error(`gave up after ${maxAttempts} attempts`),
          key,
          own,
          token,
          lease,
        );
        continue;
      }
      const yieldSlot = (handled + 1) % burst === 0;
      const handOut = this.#handOut(item, attempt, drain, yieldSlot);
      try {
        await handler(item, handOut.ctx);
      } catch (error) {
        if (handOut.acked === undefined) {
          const after = await this.#afterThrow(item, error, attempt, drain);
          if (after === "stop") return;
          next = after;
          continue;
        }
        // The handler's own step acked the item before it failed: the item is done; go on from that step.
        this.#o.logger.error(
          { ...this.#logFields(item), err: error, mailbox: this.#o.name, key, itemId: item.id },
          "mailbox item handler failed after acking its item",
        );
      }
      handled++;
      const { failed, acked } = handOut;
      if (acked === "lost") throw new Error("LOST: the lease was taken while the handler acked its item");
      next = acked ? acked.next : await this.#ackNext(own, key, token, item.id, lease, failed, yieldSlot);
    }
  }

  // An item's context for its handler, and what the handler did with it: counted it as failed, or acked
  // it in a step of its own (see `DrainContext.ackStep`).
  #handOut(
    item: MailboxItem<T>,
    attempt: number,
    drain: { key: string; own: string; token: string; lease: DrainLease },
    yieldSlot: boolean,
  ): HandOut {
    const { key, own, token, lease } = drain;
    const state: Omit<HandOut, "ctx"> = { failed: false, acked: undefined };
    const ctx: DrainContext = {
      key,
      attempt,
      onLost: (listener) => lease.loss.onLost(listener),
      assertLease: lease.assert,
      countAsFailed: () => {
        state.failed = true;
      },
      ackStep: () => {
        const call = this.#ackCall(own, key, token, item.id, lease, state.failed, yieldSlot);
        return {
          keys: call.keys,
          args: call.args,
          acked: (answer) => {
            state.acked = { next: call.answered(answer) };
          },
          lost: () => {
            state.acked = "lost";
          },
        };
      },
      // The accessor last: V8 turned a literal whose accessor came before other fields into a dictionary
      // (every handler's reads of its context were slow; `--log-maps`: "AccessorsOverwritingNonLast").
      get signal() {
        return lease.loss.signal;
      },
    };
    return Object.assign(state, { ctx });
  }

  #logFields(item: MailboxItem<T>): Record<string, unknown> {
    return this.#o.logFields?.(item.data) ?? {};
  }

  #decode(head: string, key: string): MailboxItem<T> | undefined {
    try {
      return this.#parse(head);
    } catch (error) {
      this.#o.logger.error(
        { err: error, mailbox: this.#o.name, key, itemId: head.slice(0, head.indexOf(SEP)) },
        "mailbox item is unreadable; dropping it",
      );
      return undefined;
    }
  }

  // Undefined when unreadable, said by nobody: the drainer that reaches the item says so, and drops it.
  #readable(raw: string): MailboxItem<T> | undefined {
    try {
      return this.#parse(raw);
    } catch {
      return undefined;
    }
  }

  // Throws what JSON.parse and the mailbox's own parse throw.
  #parse(head: string): MailboxItem<T> {
    const cut = head.indexOf(SEP);
    return { id: head.slice(0, cut), data: this.#o.parse(JSON.parse(head.slice(cut + 1))) };
  }

  // After a handler threw for an item it did not ack: the next item, or "stop" draining this key.
  async #afterThrow(
    item: MailboxItem<T>,
    error: unknown,
    attempt: number,
    drain: { key: string; own: string; token: string; lease: DrainLease },
  ): Promise<[string, number] | null | "stop"> {
    const { key, own, token, lease } = drain;
    if (error instanceof LeaseExpiredError)
      this.#o.logger.warn(
        { ...this.#logFields(item), mailbox: this.#o.name, key, itemId: item.id },
        "the lease may have expired before a write (this process was paused); leaving the key to its new drainer",
      );
    if (lease.loss.lost) return "stop";
    const after = await this.#handleFailure(item, error, attempt, key, own, token, lease);
    return after === "delayed" ? "stop" : after;
  }

  // After a failed item: the next item (this one given up), or "delayed" to stop draining.
  async #handleFailure(
    item: MailboxItem<T>,
    error: unknown,
    attempt: number,
    key: string,
    own: string,
    token: string,
    lease: DrainLease,
  ): Promise<[string, number] | null | "delayed"> {
    const { logger, maxAttempts } = this.#o;
    if (error instanceof RateLimitedError) {
      logger.info(
        { ...this.#logFields(item), mailbox: this.#o.name, key, retryAfterMs: error.retryAfterMs },
        "key rate limited; delaying it",
      );
      // The attempt is taken back in the same step: being told to wait is not a failure of this item.
      await this.#delay(key, own, token, error.retryAfterMs, item.id);
      return "delayed";
    }
    if (error instanceof PermanentSendError || attempt >= maxAttempts)
      return this.#fail(item, error, key, own, token, lease);
    const backoff = Math.min(30_000, 250 * 2 ** (attempt - 1));
    logger.warn(
      {
        ...this.#logFields(item),
        err: error,
        mailbox: this.#o.name,
        key,
        itemId: item.id,
        attempt,
        backoffMs: backoff,
      },
      "item failed; retrying the key later",
    );
    await this.#delay(key, own, token, backoff);
    return "delayed";
  }

  async #delay(key: string, own: string, token: string, wait: number, undoAttemptOf = ""): Promise<void> {
    // Redis takes a whole, positive PX: a script refused for 0 would leave the drain retrying at once.
    const ms = Number.isFinite(wait) ? Math.max(1, Math.ceil(wait)) : 1000;
    await runScript(
      this.#redis,
      DELAY,
      [own, this.#k("nb", key), `${this.#base}:sched`, `${this.#base}:delayed`, this.#k("att", key)],
      [token, key, ms, Date.now(), this.#o.graceMs, undoAttemptOf],
    );
    this.#promoteAfter(ms);
  }

  /**
   * Ends, at once, the leases still held by this installation's dead processes
   * (same `instanceId` and pid space, a pid that no longer runs, or this pid from an
   * earlier start), and wakes their keys, so a restart resumes its predecessor's work
   * without waiting for the leases to run out. Leases of live processes are left alone.
   */
  async reclaimDeadPredecessors(): Promise<string[]> {
    const keys = await this.#redis.zrange(`${this.#base}:sched`, 0, -1);
    if (keys.length === 0) return [];
    const owners = await this.#redis.mget(...keys.map((k) => this.#k("own", k)));
    const reclaimed: string[] = [];
    for (const [i, key] of keys.entries()) {
      const owner = owners[i];
      if (!owner || !this.#isDeadPredecessor(owner)) continue;
      const woken = await runScript(
        this.#redis,
        RECLAIM,
        [this.#k("own", key), `${this.#base}:sched`, `${this.#base}:ready`],
        [owner, Date.now(), key, this.#o.graceMs],
      );
      if (woken === 1) reclaimed.push(key);
    }
    if (reclaimed.length) {
      this.wokeOnReady();
      this.#o.logger.warn(
        { mailbox: this.#o.name, keys: reclaimed.length },
        "took over keys whose drainer died with this hub's previous process",
      );
    }
    return reclaimed;
  }

  // Only a process of this pid space can be known dead: another machine sharing the state dir, or
  // another container, keeps its leases until they run out.
  #isDeadPredecessor(token: string): boolean {
    const [instance, pidText, start, space, random] = token.split("~");
    return instance === this.#o.instanceId && random !== undefined && isDeadProcess(space, pidText, start);
  }

  // Acks the item (counting it toward its group) and takes the next one in the same step, or finishes
  // the key when none is left.
  async #ackNext(
    own: string,
    key: string,
    token: string,
    id: string,
    lease: DrainLease,
    failed = false,
    yieldSlot = false,
  ): Promise<[string, number] | null> {
    const { keys, args, answered } = this.#ackCall(own, key, token, id, lease, failed, yieldSlot);
    return answered(await runScript(this.#redis, ACK_NEXT, keys, args));
  }

  // An ack's keys and arguments (see commands/ack-next.lua), and what to make of its answer. The lease is
  // renewed by the ack only when the heartbeat has fallen behind.
  #ackCall(
    own: string,
    key: string,
    token: string,
    id: string,
    lease: DrainLease,
    failed: boolean,
    yieldSlot: boolean,
  ): { keys: string[]; args: Array<string | number>; answered(answer: unknown): [string, number] | null } {
    const { leaseMs, groups } = this.#o;
    const sentAt = Date.now();
    const renewMs = sentAt + (2 * leaseMs) / 3 > lease.confirmedUntil ? leaseMs : 0;
    const keys = [own, this.#k("q", key), `${this.#base}:sched`, this.#k("att", key), `${this.#base}:ready`];
    const group = groups ? groupOfItem(id) : undefined;
    // Only a failed segment or a group's last item touches the group's records.
    const counted = group && ((failed && group.segment) || group.total !== undefined);
    if (counted) keys.push(this.#k("g", group.group));
    const waiter = counted && group.total !== undefined ? groups?.waiterHere?.(group.group) : undefined;
    const args = [
      token,
      id,
      key,
      renewMs,
      sentAt,
      counted && failed && group.segment ? "failed" : "ok",
      groups?.ttlSeconds ?? 0,
      this.groupChannel,
      counted ? group.group : "",
      yieldSlot ? 1 : 0,
      this.#o.graceMs,
      counted ? (group.total ?? "") : "",
      waiter ? 1 : 0,
    ];
    const answered = (answer: unknown) => {
      if (renewMs > 0) lease.confirm(sentAt);
      // Settled by this ack for a waiter of this process: {result ('' for none left), counts}.
      if (Array.isArray(answer)) {
        const [result, counts] = answer as [string | number, string];
        waiter?.(settledCounts(counts));
        return this.#nextAfterAck(result === "" ? null : result);
      }
      return this.#nextAfterAck(answer);
    };
    return { keys, args, answered };
  }

  // The next item is handed out for the first time by the ack (see commands/claim-next.lua);
  // 0: the key was handed back behind waiting keys (it yielded), null: it is empty.
  #nextAfterAck(next: unknown): [string, number] | null {
    if (next === 0) {
      this.wokeOnReady();
      failpoint("mailbox.after-yield");
    }
    return typeof next === "string" ? [next, 1] : null;
  }

  /** The channel a settled group is announced on: "<group>|<total>|<delivered>|<failed>". */
  get groupChannel(): string {
    return `${this.#base}:settled`;
  }

  /** Reads a message of `groupChannel`. */
  static parseGroupSettled(message: string): { group: string; status: GroupStatus } | undefined {
    const parts = message.split(SEP);
    if (parts.length < 4) return undefined;
    const group = parts.slice(0, -3).join(SEP);
    return { group, status: settledCounts(parts.slice(-3).join(SEP)) };
  }

  /** How far a group is acked, from any process: its counts once settled, else its failures so far. */
  async groupStatus(group: string): Promise<GroupStatus> {
    // Open: the count of its failed items (or nothing); settled: "<total>|<delivered>|<failed>".
    const record = await this.#redis.get(this.#k("g", group));
    if (record?.includes(SEP)) return settledCounts(record);
    return { total: 0, delivered: 0, failed: Number(record ?? 0), settled: false };
  }

  async #fail(
    item: MailboxItem<T>,
    error: unknown,
    key: string,
    own: string,
    token: string,
    lease: DrainLease,
  ): Promise<[string, number] | null> {
    this.#o.logger.error(
      { ...this.#logFields(item), err: error, mailbox: this.#o.name, key, itemId: item.id },
      "mailbox item failed for good",
    );
    await this.#o.onFailed?.(item, error, key);
    return this.#ackNext(own, key, token, item.id, lease, true);
  }

  /** Closes the producer side (the commands connection, unless it was shared). */
  async close(): Promise<void> {
    for (const timer of this.#timers) clearTimeout(timer);
    if (this.#ownsRedis) this.#redis.disconnect();
  }
}

// A key's place among a few workers: the same for the same key in every thread.
function hashOf(key: string): number {
  let hash = 0;
  for (let i = 0; i < key.length; i++) hash = (Math.imul(hash, 31) + key.charCodeAt(i)) >>> 0;
  return hash;
}
