import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { HubError, type HubLogger } from "@hub/core";
import type { StartedRun } from "@hub/sessions";
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

  /** Asks the thread; `fallback` when it does not answer within `timeoutMs` (or has ended). */
  async ask<T>(
    ask: AgentThreadRequest["ask"],
    fallback: T,
    timeoutMs = ASK_TIMEOUT_MS,
    by?: number,
  ): Promise<T> {
    if (this.#ended) return fallback;
    const id = ++this.#next;
    let timer: NodeJS.Timeout | undefined;
    const answer = await new Promise<unknown>((resolve) => {
      this.#pending.set(id, resolve);
      timer = setTimeout(() => resolve(undefined), timeoutMs);
      this.#worker.postMessage({ id, ask, by } satisfies AgentThreadRequest);
    });
    clearTimeout(timer);
    this.#pending.delete(id);
    const failed =
      answer === undefined || (typeof answer === "object" && answer !== null && "error" in answer);
    return failed ? fallback : (answer as T);
  }

  /** Ends the thread now (what is left of its runs resumes through the session lane's recovery). */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }
}

/**
 * The agent role on `agent.threads` worker threads of this process (agent-thread.ts): each runs it as an
 * `agent` process would, so the main thread keeps ingress and delivery and other cores run the turns. A
 * thread that ends by itself is logged and started again; readiness, metrics, the drain's runs in flight,
 * SIGHUP and the stop reach every thread.
 */
export class AgentThreads implements RoleWorker {
  readonly #threads: AgentThread[];
  #stopping = false;

  private constructor(
    threads: AgentThread[],
    private readonly data: Omit<AgentThreadData, "index">,
    private readonly logger: HubLogger,
  ) {
    this.#threads = threads;
    for (const [i, thread] of threads.entries()) this.#watch(thread, i);
  }

  /** Starts `count` threads; rejects (having ended those that started) when one cannot start. */
  static async start(
    count: number,
    data: Omit<AgentThreadData, "index">,
    logger: HubLogger,
  ): Promise<AgentThreads> {
    const started = await Promise.allSettled(
      Array.from({ length: count }, (_, i) => AgentThread.start({ ...data, index: i + 1 })),
    );
    const failed = started.find((s) => s.status === "rejected");
    if (failed) {
      await Promise.all(started.map((s) => (s.status === "fulfilled" ? s.value.terminate() : undefined)));
      throw failed.reason;
    }
    const threads = started.map((s) => (s as PromiseFulfilledResult<AgentThread>).value);
    logger.info({ threads: count }, "agent role running on worker threads");
    return new AgentThreads(threads, data, logger);
  }

  /** Whether every thread's runner takes work. */
  async running(): Promise<boolean> {
    const answers = await Promise.all(this.#threads.map((t) => t.ask("running", false)));
    return !this.#stopping && answers.every(Boolean);
  }

  /** Each thread's counters and histograms (a thread that does not answer in time is left out). */
  async metrics(): Promise<MetricsSnapshot[]> {
    const answers = await Promise.all(
      this.#threads.map((t) => t.ask<MetricsSnapshot | null>("metrics", null)),
    );
    return answers.filter((a): a is MetricsSnapshot => a !== null);
  }

  /** The runs the threads have in flight. */
  async runs(): Promise<StartedRun[]> {
    return (await Promise.all(this.#threads.map((t) => t.ask<StartedRun[]>("runs", [])))).flat();
  }

  /** SIGHUP: each thread reads the config file again (and logs what it applied). */
  reload(): void {
    for (const thread of this.#threads) void thread.ask("reload", false);
  }

  /** Stops every thread as a hub process stops (runs finish or are left to recovery by `by`), then ends it. */
  async close(by?: number): Promise<void> {
    this.#stopping = true;
    const wait = by === undefined ? 60_000 : Math.max(0, by - Date.now());
    await Promise.all(
      this.#threads.map(async (thread) => {
        await thread.ask("stop", undefined, wait, by);
        await thread.terminate();
      }),
    );
  }

  // A thread that ends while the hub is not stopping (a crash in it) is started again; its runs' sessions
  // resume when their lane leases run out, as a dead agent process's do.
  #watch(thread: AgentThread, i: number): void {
    void thread.exited.then(async (code) => {
      if (this.#stopping) return;
      this.logger.error(
        { thread: i + 1, code, ...(thread.error ? { err: thread.error } : {}) },
        "an agent thread ended unexpectedly; starting it again (its runs resume when their session leases run out)",
      );
      await new Promise((r) => setTimeout(r, RESTART_DELAY_MS));
      if (this.#stopping) return;
      try {
        const next = await AgentThread.start({ ...this.data, index: i + 1 });
        this.#threads[i] = next;
        this.#watch(next, i);
      } catch (error) {
        this.logger.error({ thread: i + 1, err: error }, "an agent thread could not be started again");
      }
    });
  }
}
