import { closeSync, openSync } from "node:fs";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { HubError, type HubLogger } from "@hub/core";
import type { StartedRun } from "@hub/sessions";
import { AggregatorRegistry } from "prom-client";
import type { AgentThreadData, AgentThreadMessage, AgentThreadRequest } from "./agent-thread-messages.js";
import type { MetricsSnapshot } from "./metrics.js";
import type { RoleWorker } from "./operations.js";

/** How long a question to a thread may take before it counts as unanswered (a stuck or dying thread). */
const ASK_TIMEOUT_MS = 2000;
/** How long a thread that ended by itself waits before it is started again. */
const RESTART_DELAY_MS = 1000;

// The thread's entry beside this file: agent-thread.js in the build. Under tsx (this file is .ts) a worker
// does not inherit tsx's `--import`, so a small module registers tsx first and then imports the entry.
function threadEntry(): URL {
  if (extname(fileURLToPath(import.meta.url)) !== ".ts") return new URL("./agent-thread.js", import.meta.url);
  const entry = new URL("./agent-thread.ts", import.meta.url).href;
  const tsx = import.meta.resolve("tsx/esm/api");
  const boot = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(entry)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(boot)}`);
}

/** One worker thread running the agent role, and the questions in flight to it. */
class AgentThread {
  readonly #worker: Worker;
  readonly #pending = new Map<number, (value: unknown) => void>();
  #next = 0;
  #ended = false;
  /** What ended the thread, when an uncaught error did. */
  error: Error | undefined;
  /** Resolves when the thread has ended (its exit code). */
  readonly exited: Promise<number>;

  private constructor(data: AgentThreadData) {
    this.#worker = new Worker(threadEntry(), { workerData: data });
    // Always listened to: an error event nobody listens to would end the whole process.
    this.#worker.on("error", (error) => {
      this.error = error;
    });
    this.exited = new Promise((resolve) => this.#worker.once("exit", resolve));
    // An ended thread answers nothing: every question still waiting gets its fallback.
    void this.exited.then(() => {
      this.#ended = true;
      for (const resolve of this.#pending.values()) resolve(undefined);
      this.#pending.clear();
    });
  }

  /** Starts a thread; resolves once its agent role runs, rejects with why it could not start. */
  static async start(data: AgentThreadData): Promise<AgentThread> {
    const thread = new AgentThread(data);
    await new Promise<void>((resolve, reject) => {
      thread.#worker.on("message", (message: AgentThreadMessage) => {
        if (message.kind === "ready") resolve();
        else if (message.kind === "failed") reject(new HubError("agent_thread", message.error));
        else thread.#pending.get(message.id)?.(message.value);
      });
      void thread.exited.then((code) =>
        reject(
          thread.error ??
            new HubError("agent_thread", `agent thread ${data.index} ended at its start (exit code ${code})`),
        ),
      );
    }).catch(async (error: unknown) => {
      await thread.#worker.terminate();
      throw error;
    });
    return thread;
  }

  /** Asks the thread; undefined when it does not answer within `timeoutMs` (or has ended, or failed to). */
  async ask<T>(
    ask: AgentThreadRequest["ask"],
    timeoutMs = ASK_TIMEOUT_MS,
    by?: number,
  ): Promise<T | undefined> {
    if (this.#ended) return undefined;
    const id = ++this.#next;
    let timer: NodeJS.Timeout | undefined;
    const answer = await new Promise<unknown>((resolve) => {
      this.#pending.set(id, resolve);
      timer = setTimeout(() => resolve(undefined), timeoutMs);
      this.#worker.postMessage({ id, ask, by } satisfies AgentThreadRequest);
    });
    clearTimeout(timer);
    this.#pending.delete(id);
    const failed = typeof answer === "object" && answer !== null && "error" in answer;
    return failed ? undefined : (answer as T | undefined);
  }

  /** Ends the thread now (what is left of its runs resumes through the session lane's recovery). */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }
}

/** One thread's place: the thread running in it now, and what it last answered. */
interface Slot {
  thread: AgentThread;
  /** Its counters and histograms at the last scrape it answered (kept for a scrape it misses). */
  metrics: MetricsSnapshot | undefined;
  /** Its runs in flight when it last answered (kept while it is too busy to answer). */
  runs: StartedRun[];
}

/**
 * The agent role on `agent.threads` worker threads of this process (agent-thread.ts): each runs it as an
 * `agent` process would, so the main thread keeps ingress and delivery and other cores run the turns. A
 * thread that ends by itself is logged and started again; readiness, metrics, the drain's runs in flight,
 * SIGHUP and the stop reach every thread.
 */
export class AgentThreads implements RoleWorker {
  readonly #slots: Slot[];
  #stopping = false;
  /** Restarts under way (a stop waits for them, and stops what they started). */
  readonly #restarts = new Set<Promise<void>>();
  /** The counts of threads that ended, so the process's counters never go back. */
  #retired: MetricsSnapshot | undefined;
  /** The runs the threads left unfinished at the stop (for its last log line). */
  #left: StartedRun[] = [];

  private constructor(
    threads: AgentThread[],
    private readonly data: Omit<AgentThreadData, "index">,
    private readonly logger: HubLogger,
  ) {
    this.#slots = threads.map((thread) => ({ thread, metrics: undefined, runs: [] }));
    for (const [i, slot] of this.#slots.entries()) this.#watch(slot.thread, i);
  }

  /**
   * Starts `count` threads (their log lines to `logFile` when given, else standard output); rejects
   * (having ended those that started) when one cannot start.
   */
  static async start(
    count: number,
    settings: Omit<AgentThreadData, "index" | "log"> & { log: { level: string; file?: string | undefined } },
    logger: HubLogger,
  ): Promise<AgentThreads> {
    // Opened once here and shared: a thread that ends leaves no descriptor behind.
    const fd = settings.log.file ? openSync(settings.log.file, "a") : undefined;
    const data = { ...settings, log: { level: settings.log.level, fd } };
    const started = await Promise.allSettled(
      Array.from({ length: count }, (_, i) => AgentThread.start({ ...data, index: i + 1 })),
    );
    const failed = started.find((s) => s.status === "rejected");
    if (failed) {
      await Promise.all(started.map((s) => (s.status === "fulfilled" ? s.value.terminate() : undefined)));
      if (fd !== undefined) closeSync(fd);
      throw failed.reason;
    }
    const threads = started.map((s) => (s as PromiseFulfilledResult<AgentThread>).value);
    logger.info({ threads: count }, "agent role running on worker threads");
    return new AgentThreads(threads, data, logger);
  }

  /** Whether every thread's runner takes work. */
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

  /** The runs the threads have in flight (a busy thread's as it last said); after the stop, those left. */
  async runs(): Promise<StartedRun[]> {
    if (this.#stopping) return this.#left;
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
    await Promise.all(this.#restarts);
    const left = await Promise.all(this.#slots.map((slot) => this.#stop(slot.thread, by)));
    this.#left = left.flat();
    if (this.data.log.fd !== undefined) closeSync(this.data.log.fd);
  }

  // Stops one thread and ends it; the runs it could not finish by `by`.
  async #stop(thread: AgentThread, by: number | undefined): Promise<StartedRun[]> {
    const wait = by === undefined ? 60_000 : Math.max(0, by - Date.now());
    const left = await thread.ask<StartedRun[]>("stop", wait, by);
    await thread.terminate();
    return left ?? [];
  }

  // A thread that ends while the hub is not stopping (a crash in it) is started again; its runs' sessions
  // resume when their lane leases run out, as a dead agent process's do.
  #watch(thread: AgentThread, i: number): void {
    void thread.exited.then((code) => {
      if (this.#stopping) return;
      this.logger.error(
        { thread: i + 1, code, ...(thread.error ? { err: thread.error } : {}) },
        "an agent thread ended unexpectedly; starting it again (its runs resume when their session leases run out)",
      );
      const restart = this.#restart(i).finally(() => this.#restarts.delete(restart));
      this.#restarts.add(restart);
    });
  }

  async #restart(i: number): Promise<void> {
    const slot = this.#slots[i] as Slot;
    // Its counts so far stay in the process's total; the new thread counts from zero.
    if (slot.metrics) this.#retired = await sumSnapshots(this.#retired, slot.metrics);
    Object.assign(slot, { metrics: undefined, runs: [] });
    await new Promise((r) => setTimeout(r, RESTART_DELAY_MS));
    if (this.#stopping) return;
    try {
      const next = await AgentThread.start({ ...this.data, index: i + 1 });
      // A stop that began meanwhile waits for this restart: what it started stops with the others.
      if (this.#stopping) {
        await this.#stop(next, undefined);
        return;
      }
      slot.thread = next;
      this.#watch(next, i);
      this.logger.info({ thread: i + 1 }, "agent thread started again");
    } catch (error) {
      this.logger.error({ thread: i + 1, err: error }, "an agent thread could not be started again");
    }
  }
}

// Two sets of counts as one (counters and histograms summed).
async function sumSnapshots(a: MetricsSnapshot | undefined, b: MetricsSnapshot): Promise<MetricsSnapshot> {
  if (!a) return b;
  return (await AggregatorRegistry.aggregate([a, b]).getMetricsAsJSON()) as MetricsSnapshot;
}
