import { closeSync, openSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { HubError, type HubLogger } from "@hub/core";
import { type ClaimedKey, type RemoteWorker, WorkerRoom } from "@hub/queue";
import type { StartedRun } from "@hub/sessions";
import { AggregatorRegistry } from "prom-client";
import { AgentThread, type ThreadDelivery } from "./agent-thread-handle.js";
import type { AgentThreadData } from "./agent-thread-messages.js";
import type { MetricsSnapshot } from "./metrics.js";
import type { RoleWorker } from "./operations.js";

/** The wait before a thread that ended by itself is started again; doubled after each failed start, to the max. */
const RESTART_DELAY_MS = 1000;
const RESTART_MAX_DELAY_MS = 30_000;
/** How long a thread started again may take to start before it is ended and tried again. */
const RESTART_TIMEOUT_MS = 60_000;
/** How long a stop without a deadline waits for a thread to stop. */
const STOP_WAIT_MS = 60_000;

/** One thread's place: the thread in it now (running, or starting again), and what it last answered. */
interface Slot {
  thread: AgentThread;
  /** Its runner's room, shared with the thread in it now (see `runners`). */
  room: WorkerRoom;
  /** Where the thread in it keeps the slots it holds in the main thread's delivery room (freed if it ends). */
  deliveryHolds: SharedArrayBuffer;
  /** Its counters and histograms at the last scrape it answered (kept for a scrape it misses). */
  metrics: MetricsSnapshot | undefined;
  /** Its runs in flight when it last answered (kept while it is too busy to answer). */
  runs: StartedRun[];
}

/**
 * The agent role on `agent.threads` worker threads of this process (agent-thread.ts): each runs it as an
 * `agent` process would, so the main thread keeps ingress and delivery and other cores run the turns. A
 * thread that ends by itself is logged and started again (and again, backing off, while it cannot start);
 * readiness, metrics, the drain's runs in flight, SIGHUP and the stop reach every thread.
 */
export class AgentThreads implements RoleWorker {
  readonly #slots: Slot[];
  #stopping = false;
  #closed = false;
  /** Ends the restarts' waits when the stop begins. */
  readonly #stop = new AbortController();
  /** Restarts under way (the stop waits for them). */
  readonly #restarts = new Set<Promise<void>>();
  /** The counts of threads that ended, so the process's counters never go back. */
  #retired: MetricsSnapshot | undefined;
  /** The runs the threads left unfinished at the stop (for its last log line). */
  #left: StartedRun[] = [];

  private constructor(
    threads: AgentThread[],
    rooms: WorkerRoom[],
    holds: SharedArrayBuffer[],
    private readonly data: Omit<AgentThreadData, "index" | "laneRoom" | "deliveryHolds">,
    private readonly delivery: ThreadDelivery,
    private readonly logger: HubLogger,
  ) {
    this.#slots = threads.map((thread, i) => ({
      thread,
      room: rooms[i] as WorkerRoom,
      deliveryHolds: holds[i] as SharedArrayBuffer,
      metrics: undefined,
      runs: [],
    }));
    for (const [i, slot] of this.#slots.entries()) this.#watch(slot.thread, i);
  }

  /**
   * Starts `count` threads (their log lines to `logFile` when given, else standard output), whose reply
   * pushes claim targets for this thread's `delivery` (`deliveryRoom`); rejects (having
   * ended those that started) when one cannot start.
   */
  static async start(
    count: number,
    settings: Omit<AgentThreadData, "index" | "log" | "laneRoom" | "deliveryHolds"> & {
      log: { level: string; file?: string | undefined };
    },
    delivery: ThreadDelivery,
    logger: HubLogger,
  ): Promise<AgentThreads> {
    // Opened once here and shared: a thread that ends leaves no descriptor behind.
    const fd = settings.log.file ? openSync(settings.log.file, "a") : undefined;
    const data = { ...settings, log: { level: settings.log.level, fd } };
    const rooms = Array.from({ length: count }, () => new WorkerRoom());
    const holds = rooms.map(() => WorkerRoom.holdsCell());
    const threads = rooms.map(
      (room, i) =>
        new AgentThread(
          { ...data, index: i + 1, laneRoom: room.buffer, deliveryHolds: holds[i] as SharedArrayBuffer },
          delivery,
        ),
    );
    const failed = (await Promise.allSettled(threads.map((t) => t.ready))).find(
      (s) => s.status === "rejected",
    );
    if (failed) {
      await Promise.all(threads.map((t) => t.terminate()));
      if (fd !== undefined) closeSync(fd);
      throw failed.reason;
    }
    logger.info({ threads: count }, "agent role running on worker threads");
    return new AgentThreads(threads, rooms, holds, data, delivery, logger);
  }

  /**
   * The threads' runners as this thread's session lane sees them (see `SessionLane.addRemoteRunner`): the
   * main thread's admission claims an idle session for a runner with a free slot in its own step and
   * begins the run there, as a process's own runner's admission does, and posts the claim to its thread.
   */
  runners(): RemoteWorker[] {
    return this.#slots.map((slot) => ({
      room: slot.room,
      // To the thread in the slot now (one started again included).
      claimed: (claim: ClaimedKey) => slot.thread.claimed(claim),
    }));
  }

  /** Whether every thread's runner takes work (a thread starting again does not yet). */
  async running(): Promise<boolean> {
    const answers = await Promise.all(this.#slots.map((s) => s.thread.ask<boolean>("running")));
    return !this.#stopping && answers.every((a) => a === true);
  }

  /** Each thread's counters and histograms (its last ones when it does not answer), and the ended threads'. */
  async metrics(): Promise<MetricsSnapshot[]> {
    await Promise.all(
      this.#slots.map(async (slot) => {
        slot.metrics = (await slot.thread.ask<MetricsSnapshot>("metrics")) ?? slot.metrics;
      }),
    );
    const current = this.#slots.flatMap((s) => (s.metrics ? [s.metrics] : []));
    return this.#retired ? [this.#retired, ...current] : current;
  }

  /** The runs the threads have in flight (a busy thread's as it last said); once stopped, those left. */
  async runs(): Promise<StartedRun[]> {
    if (this.#closed) return this.#left;
    await Promise.all(
      this.#slots.map(async (slot) => {
        slot.runs = (await slot.thread.ask<StartedRun[]>("runs")) ?? slot.runs;
      }),
    );
    return this.#slots.flatMap((s) => s.runs);
  }

  /** SIGHUP: each thread reads the config file again (and logs what it applied). */
  reload(): void {
    for (const slot of this.#slots) void slot.thread.ask("reload");
  }

  /** Stops every thread as a hub process stops (runs finish or are left to recovery by `by`), then ends it. */
  async close(by?: number): Promise<void> {
    this.#stopping = true;
    this.#stop.abort();
    // A thread still starting again has taken no work: it is ended, and its restart gives up.
    await Promise.all(this.#slots.filter((s) => !s.thread.started).map((s) => s.thread.terminate()));
    await Promise.all(this.#restarts);
    const left = await Promise.all(this.#slots.map((slot) => this.#stopSlot(slot, by)));
    this.#left = left.flat();
    this.#closed = true;
    if (this.data.log.fd !== undefined) closeSync(this.data.log.fd);
  }

  // Stops a slot's thread and ends it; the runs it could not finish by `by` (as it last said, if it is silent).
  async #stopSlot(slot: Slot, by: number | undefined): Promise<StartedRun[]> {
    const wait = by === undefined ? STOP_WAIT_MS : Math.max(0, by - Date.now());
    const left = await slot.thread.ask<StartedRun[]>("stop", wait, by);
    await slot.thread.terminate();
    return left ?? slot.runs;
  }

  // A thread that ends while the hub is not stopping (a crash in it) is started again; its runs' sessions
  // resume when their lane leases run out, as a dead agent process's do.
  #watch(thread: AgentThread, i: number): void {
    void thread.exited.then((code) => {
      // Admission claims no more sessions for it (those claimed for it and never taken resume when their
      // leases run out, as its runs in flight do, as interrupted runs).
      this.#ended(this.#slots[i] as Slot);
      if (this.#stopping) return;
      this.logger.error(
        { thread: i + 1, code, ...(thread.error ? { err: thread.error } : {}) },
        "an agent thread ended unexpectedly; starting it again (its runs resume when their session leases run out)",
      );
      const restart = this.#restart(i).finally(() => this.#restarts.delete(restart));
      this.#restarts.add(restart);
    });
  }

  // A slot's thread ended: nothing more is claimed for it, and what it held in the delivery room is free.
  #ended(slot: Slot): void {
    slot.room.ended();
    this.delivery.forgetHolds(slot.deliveryHolds);
  }

  async #restart(i: number): Promise<void> {
    const slot = this.#slots[i] as Slot;
    // Its counts so far stay in the process's total; the new thread counts from zero.
    if (slot.metrics) this.#retired = await sumSnapshots(this.#retired, slot.metrics);
    Object.assign(slot, { metrics: undefined, runs: [] });
    for (let wait = RESTART_DELAY_MS; ; wait = Math.min(wait * 2, RESTART_MAX_DELAY_MS)) {
      if (!(await this.#waitUnlessStopped(wait))) return;
      // From the running config: a SIGHUP reload changes its channels in place, so this thread starts with them.
      const next = new AgentThread(
        { ...this.data, index: i + 1, laneRoom: slot.room.buffer, deliveryHolds: slot.deliveryHolds },
        this.delivery,
      );
      // In its slot while it starts: a stop ends it there. Whenever it ends (a start that fails or times out
      // included), nothing more is claimed for it.
      slot.thread = next;
      void next.exited.then(() => this.#ended(slot));
      try {
        await withDeadline(next.ready, RESTART_TIMEOUT_MS);
      } catch (error) {
        await next.terminate();
        if (this.#stopping) return;
        this.logger.error(
          { thread: i + 1, err: error },
          "an agent thread could not be started again; trying again",
        );
        continue;
      }
      // A stop that began meanwhile stops it with the others, by the stop's deadline.
      if (this.#stopping) return;
      this.#watch(next, i);
      this.logger.info({ thread: i + 1 }, "agent thread started again");
      return;
    }
  }

  // Waits `ms`; false when the stop began (at once, not after the wait).
  async #waitUnlessStopped(ms: number): Promise<boolean> {
    const waited = await sleep(ms, true, { signal: this.#stop.signal }).catch(() => false);
    return waited && !this.#stopping;
  }
}

// `work`, or a rejection after `ms`.
async function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new HubError("agent_thread", `the agent thread did not start within ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

// Two sets of counts as one (counters and histograms summed).
async function sumSnapshots(a: MetricsSnapshot | undefined, b: MetricsSnapshot): Promise<MetricsSnapshot> {
  if (!a) return b;
  return (await AggregatorRegistry.aggregate([a, b]).getMetricsAsJSON()) as MetricsSnapshot;
}
