import {
  Backoff,
  type ChannelAdapter,
  ChannelRefusedError,
  type ChannelStatus,
  ChannelStatusCell,
  describeError,
  type HubLogger,
  type InboundHandler,
  RateLimitedError,
  sleep,
} from "@hub/core";

/** One channel account's state, as the gateway's `channels.status` reports it. */
export interface ChannelReport {
  channel: string;
  accountId: string;
  status: ChannelStatus;
}

interface Supervised {
  adapter: ChannelAdapter;
  cell: ChannelStatusCell;
  started: boolean;
  /** A call to `adapter.start` has not settled yet. */
  connecting: boolean;
  /** `adapter.stop` was called (once is enough). */
  stopped: boolean;
  loop: Promise<void>;
}

/**
 * Starts every channel account in the background and keeps it starting: a
 * network failure is `reconnecting` (with the reason and the next try, capped
 * backoff) until the platform answers; a definitive refusal (`ChannelRefusedError`,
 * e.g. a bad token) is `failed` with one clear line. The hub, its gateway and
 * the healthy channels run whatever one channel does. Once an adapter is
 * started, its own `status()` (when it has one) reports its reconnects.
 */
export class ChannelSupervisor {
  readonly #entries: Supervised[] = [];
  readonly #stop = new AbortController();
  readonly #firstAttempts: Promise<void>[] = [];
  /** Set once intake is paused (the drain, or the stop); an adapter still connecting pauses when started. */
  #paused: Promise<void> | undefined;

  constructor(
    private readonly adapters: readonly ChannelAdapter[],
    private readonly onInbound: InboundHandler,
    private readonly logger: HubLogger,
    private readonly backoff: { initialMs: number; maxMs: number } = { initialMs: 1000, maxMs: 60_000 },
  ) {}

  /** Starts supervising every adapter; returns at once. */
  start(): void {
    for (const adapter of this.adapters) {
      let settled: () => void = () => {};
      this.#firstAttempts.push(new Promise<void>((r) => (settled = r)));
      const entry: Supervised = {
        adapter,
        cell: new ChannelStatusCell(),
        started: false,
        connecting: false,
        stopped: false,
        loop: Promise.resolve(),
      };
      entry.loop = this.#supervise(entry, settled);
      this.#entries.push(entry);
    }
  }

  /** Resolves once every channel's first connection attempt is over (connected, reconnecting or failed). */
  firstAttempts(): Promise<void> {
    return Promise.all(this.#firstAttempts).then(() => undefined);
  }

  /** The state of every channel account. */
  statuses(): ChannelReport[] {
    return this.#entries.map(({ adapter, cell, started }) => ({
      channel: adapter.channel,
      accountId: adapter.accountId ?? "default",
      status: started ? (adapter.status?.() ?? cell.get()) : cell.get(),
    }));
  }

  async #supervise(entry: Supervised, settled: () => void): Promise<void> {
    const { adapter, cell } = entry;
    const log = this.logger.child({ channel: adapter.channel, accountId: adapter.accountId ?? "default" });
    const backoff = new Backoff(this.backoff.initialMs, this.backoff.maxMs);
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      cell.set("connecting");
      entry.connecting = true;
      try {
        await adapter.start(this.onInbound);
        entry.started = true;
        cell.set("connected");
        log.info(`${adapter.channel} channel started`);
        if (this.#paused) await this.#pause(entry);
        return settled();
      } catch (error) {
        if (signal.aborted) return settled(); // stopped while connecting: nothing to report
        if (error instanceof ChannelRefusedError) {
          cell.set("failed", { reason: error.message });
          log.error({ reason: error.message }, `${adapter.channel} channel failed: ${error.message}`);
          return settled();
        }
        // A platform that said how long to wait (a 429 at start) is not asked again sooner.
        const told = error instanceof RateLimitedError ? error.retryAfterMs : 0;
        const wait = Math.max(backoff.next(), told);
        const reason = describeError(error);
        cell.set("reconnecting", { reason, nextRetryAt: Date.now() + wait });
        log.warn(
          { reason, retryInMs: wait },
          `${adapter.channel} channel could not connect (${reason}); next try in ${Math.ceil(wait / 1000)} s`,
        );
        settled();
        await sleep(wait, signal);
      } finally {
        entry.connecting = false;
      }
    }
  }

  /**
   * The hub drains: every started adapter stops taking in what its platform keeps for later (see
   * `pauseIntake`); one still connecting does so when its start is over.
   */
  pauseIntake(): Promise<void> {
    // Once: the drain pauses intake, and the stop after it asks again.
    this.#paused ??= Promise.all(
      this.#entries.filter((e) => e.started && !e.stopped).map((e) => this.#pause(e)),
    ).then(() => undefined);
    return this.#paused;
  }

  async #pause(entry: Supervised): Promise<void> {
    if (!entry.adapter.pauseIntake) return;
    await this.#tolerated(
      entry,
      entry.adapter.pauseIntake(),
      "could not hand its intake over; it stops with the hub",
    );
  }

  /**
   * Stops retrying, then stops every adapter that started (inbound ends before the rest of the hub
   * stops). An adapter still connecting is stopped at once, which ends its start: a platform that
   * never answers must not hold the hub's shutdown.
   */
  async stop(): Promise<void> {
    this.#stop.abort();
    const connecting = this.#entries.filter((e) => e.connecting).map((e) => this.#stopAdapter(e));
    await Promise.all(this.#entries.map((e) => e.loop));
    await Promise.all(connecting);
    for (const entry of this.#entries) {
      if (entry.started) await this.#stopAdapter(entry);
      entry.cell.set("stopped");
    }
  }

  async #stopAdapter(entry: Supervised): Promise<void> {
    if (entry.stopped) return;
    entry.stopped = true;
    await this.#tolerated(entry, entry.adapter.stop(), "did not stop cleanly");
  }

  // An adapter's pause or stop that fails is said, not thrown: the hub goes on stopping.
  async #tolerated(entry: Supervised, work: Promise<void>, failed: string): Promise<void> {
    await work.catch((error: unknown) =>
      this.logger.warn(
        { channel: entry.adapter.channel, err: describeError(error) },
        `${entry.adapter.channel} channel ${failed}`,
      ),
    );
  }
}
