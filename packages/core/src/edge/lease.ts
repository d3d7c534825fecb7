import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { HubLogger } from "../logger.js";
import { isDeadProcess, PID_SPACE, PROCESS_START } from "./process-identity.js";
import { sleep } from "./sleep.js";

/**
 * Where connection leases live: one key per connection that only one process
 * may hold (the hub gives one backed by its Redis). `hold` takes or renews the
 * key for `token` and answers who holds it; `release` gives it up only if
 * `token` still holds it (a holder that lost it while frozen must not end its
 * successor's lease).
 */
export interface LeaseStore {
  hold(key: string, token: string, ttlMs: number): Promise<{ held: boolean; holder: string }>;
  release(key: string, token: string): Promise<void>;
  /** Closes what the store holds (its own Redis connection). */
  close?(): Promise<void>;
}

/** What an adapter needs of a lease: take/renew it, know whether it still holds it, give it up. */
export interface AccountLease {
  /** Takes or renews the lease; `held: false` names the holder's token when another process has it. */
  hold(): Promise<{ held: boolean; holder: string }>;
  /** Whether the lease is surely still ours right now (renewed recently enough, by our own clock). */
  valid(): boolean;
  release(): Promise<void>;
  /** Releases the lease and closes what it holds (its Redis connection). */
  close?(): Promise<void>;
  /** How long one hold lasts (ms); a holder renews it at a third of that. */
  readonly ttlMs: number;
}

/** The key of a channel account's connection lease: `<prefix>:<channel>:lease:<accountId>`. */
export function connectionLeaseKey(prefix: string, channel: string, accountId: string): string {
  return `${prefix}:${channel}:lease:${accountId}`;
}

/** A holder's token (`host:pid:start:space:random`) in words: `host pid 1234`. */
export function describeHolder(token: string): string {
  return token.split(":").slice(0, 2).join(" pid ");
}

/**
 * Whether a holder's token names a process that certainly no longer runs (see `isDeadProcess`:
 * only a process of this pid space can be known dead). A pid reused by another process counts as
 * alive, and so does a holder in another container or on another machine: the lease is waited out.
 */
export function isDeadLocalHolder(token: string): boolean {
  const [, pidText, start, space, random] = token.split(":");
  return random !== undefined && isDeadProcess(space, pidText, start);
}

/**
 * A lease on one connection (a Telegram bot's polling, a Discord gateway, a
 * WhatsApp socket): a key holding the holder's token (host, pid, start, pid space, random), set
 * with a time limit and renewed while held. A process that dies stops
 * renewing, and another takes over once the time runs out. `valid()` counts
 * from before the renewal was sent, minus a margin, so a process frozen past
 * its lease knows it lost it before it does anything.
 */
export class ConnectionLease implements AccountLease {
  readonly token = `${hostname()}:${process.pid}:${PROCESS_START}:${PID_SPACE}:${randomUUID().slice(0, 12)}`;
  #validUntil = 0;

  constructor(
    private readonly store: LeaseStore,
    readonly key: string,
    readonly ttlMs: number,
    private readonly ownsStore = false,
  ) {}

  async hold(): Promise<{ held: boolean; holder: string }> {
    const sentAt = Date.now();
    let answer = await this.store.hold(this.key, this.token, this.ttlMs);
    if (!answer.held && isDeadLocalHolder(answer.holder)) {
      // A holder that died on this machine (a crash and restart) is not waited out.
      await this.store.release(this.key, answer.holder);
      answer = await this.store.hold(this.key, this.token, this.ttlMs);
    }
    this.#validUntil = answer.held ? sentAt + this.ttlMs - Math.min(1000, this.ttlMs / 10) : 0;
    return answer;
  }

  valid(): boolean {
    return Date.now() < this.#validUntil;
  }

  async release(): Promise<void> {
    this.#validUntil = 0;
    await this.store.release(this.key, this.token);
  }

  async close(): Promise<void> {
    await this.release().catch(() => undefined);
    if (this.ownsStore) await this.store.close?.();
  }
}

/** Resolves (with nothing) when `signal` aborts. */
function untilAborted(signal: AbortSignal): Promise<undefined> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(undefined);
    signal.addEventListener("abort", () => resolve(undefined), { once: true });
  });
}

/** Options of a `SingleHolder`. */
export interface SingleHolderOptions {
  lease: AccountLease;
  /** What is held, for the status line: `this Telegram bot`, `this Discord bot`. */
  what: string;
  /**
   * Called while another process holds the lease (`standby`: this one takes over when it stops), or
   * while the lease store cannot be reached (not `standby`).
   */
  onWaiting(reason: string, nextRetryAt: number, standby: boolean): void;
  /** Called each time the lease is taken (before the connection starts). */
  onHeld?(): void;
  /** Called once when a held lease is lost (taken over, or not renewed in time). */
  onLost?(reason: string): void;
  /** Where a waiting period is said once when it begins (a standby, or no lease store) and once when it ends. */
  logger?: HubLogger;
}

/**
 * Runs a connection that only one process may hold, behind a lease: waits
 * for the lease (reporting who holds it), runs the connection with a signal
 * that aborts the moment the lease is lost (another process took it, or no
 * renewal was confirmed in time by our own clock), and goes back to waiting.
 * A process that dies stops renewing; another takes over within the lease.
 */
export class SingleHolder {
  constructor(private readonly o: SingleHolderOptions) {}

  /** Whether the lease is surely ours right now; check it right before each call that needs it. */
  valid(): boolean {
    return this.o.lease.valid();
  }

  /**
   * Holds the connection until `signal` aborts: each time the lease is taken,
   * `connect(held)` runs; `held` aborts when the lease is lost or `signal`
   * aborts. Returns when `signal` aborts or `connect` returns while the lease
   * is still held (the connection ended for good, e.g. a refused token); a
   * `connect` that throws gives the lease up and throws.
   */
  async run(signal: AbortSignal, connect: (held: AbortSignal) => Promise<void>): Promise<void> {
    while (!signal.aborted) {
      if (!(await this.#acquire(signal))) break;
      this.o.onHeld?.();
      const held = new AbortController();
      const stop = () => held.abort();
      signal.addEventListener("abort", stop, { once: true });
      const renewing = this.#renew(held);
      const ended = await connect(held.signal).then(
        () => ({ failed: false as const }),
        (error: unknown) => ({ failed: true as const, error }),
      );
      // A connection that stopped because the lease ran out by our clock lost it too.
      const lost = (held.signal.aborted || !this.o.lease.valid()) && !signal.aborted;
      held.abort();
      signal.removeEventListener("abort", stop);
      await renewing;
      await this.o.lease.release().catch(() => undefined);
      if (ended.failed) throw ended.error;
      if (!lost) return;
    }
  }

  /** Waits until the lease is ours (true) or `signal` aborts (false). */
  async #acquire(signal: AbortSignal): Promise<boolean> {
    const { lease, what, logger } = this.o;
    const every = Math.max(200, lease.ttlMs / 3);
    // Said once per waiting period, not at every try (a third of the lease): the status has the rest.
    let waiting: "standby" | "unavailable" | undefined;
    while (!signal.aborted) {
      try {
        // A hold that hangs (Redis unreachable) must not keep a stopping process waiting.
        const answer = await Promise.race([lease.hold(), untilAborted(signal)]);
        if (!answer) return false;
        const { held, holder } = answer;
        if (held) {
          if (waiting) logger?.info(`this process holds ${what} now`);
          return true;
        }
        const reason = `another hub process (${describeHolder(holder)}) holds ${what}; taking over when it stops`;
        if (waiting !== "standby") logger?.info(reason);
        waiting = "standby";
        this.o.onWaiting(reason, Date.now() + every, true);
      } catch (error) {
        const reason = `the connection lease is unavailable (${error instanceof Error ? error.message : String(error)})`;
        if (waiting !== "unavailable") logger?.warn(`${reason}; ${what} waits until it answers`);
        waiting = "unavailable";
        this.o.onWaiting(reason, Date.now() + every, false);
      }
      await sleep(every, signal);
    }
    return false;
  }

  /** Renews every third of the lease until `held` aborts; aborts `held` when the lease is lost. */
  async #renew(held: AbortController): Promise<void> {
    const { lease } = this.o;
    const lose = (reason: string) => {
      if (held.signal.aborted) return;
      this.o.onLost?.(reason);
      held.abort();
    };
    while (!held.signal.aborted) {
      await sleep(lease.ttlMs / 3, held.signal);
      if (held.signal.aborted) return;
      let answered = false;
      const renewal = lease.hold().then(
        ({ held: still, holder }) => {
          if (!still) lose(`another hub process (${describeHolder(holder)}) took over ${this.o.what}`);
        },
        // Redis did not answer: the lease stays ours until our own clock says it may have run out.
        () => undefined,
      );
      void renewal.finally(() => {
        answered = true;
      });
      // A renewal that hangs (Redis unreachable) must not keep the connection past the lease by our clock.
      while (!answered && lease.valid() && !held.signal.aborted)
        await sleep(Math.min(250, lease.ttlMs / 10), held.signal);
      if (!lease.valid()) lose(`the lease on ${this.o.what} was not renewed in time`);
    }
  }
}
