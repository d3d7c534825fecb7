import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { HubError, type ReplySettlement } from "@hub/core";
import type { ClaimedKey } from "@hub/queue";
import type { ReplyDispatcher } from "@hub/reply";

/**
 * The main thread's delivery, as an agent thread's pushes claim targets for it (see
 * `ReplyDispatcher.deliveryRoom`) and its runs wait for their replies' settlements (see `SettleRelay`).
 */
export type ThreadDelivery = Pick<
  ReplyDispatcher,
  "adopt" | "forgetHolds" | "waitElsewhere" | "stopWaitingElsewhere"
>;

import type {
  AgentThreadData,
  AgentThreadMessage,
  AgentThreadRequest,
  ToAgentThread,
} from "./agent-thread-messages.js";

/** How long a question to a thread may take before it counts as unanswered (a stuck or dying thread). */
const ASK_TIMEOUT_MS = 2000;

// The thread's entry beside this file: agent-thread.js in the build. Under tsx (this file is .ts) a worker
// does not inherit tsx's `--import`, so a small module registers tsx first and then imports the entry.
function threadEntry(): URL {
  if (extname(fileURLToPath(import.meta.url)) !== ".ts") return new URL("./agent-thread.js", import.meta.url);
  const entry = new URL("./agent-thread.ts", import.meta.url).href;
  const tsx = import.meta.resolve("tsx/esm/api");
  const boot = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(entry)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(boot)}`);
}

/**
 * One worker thread running the agent role (agent-thread.ts): its start, the questions in flight to it, its
 * end. Made at once; `ready` settles when its role runs (or why it could not start), so whoever holds it can
 * end it while it is still starting.
 */
export class AgentThread {
  readonly #worker: Worker;
  readonly #pending = new Map<number, (value: unknown) => void>();
  #next = 0;
  #ended = false;
  /** Whether its agent role runs (it said `ready`). */
  started = false;
  /** What ended the thread, when an uncaught error did. */
  error: Error | undefined;
  /** Resolves when the thread has ended (its exit code). */
  readonly exited: Promise<number>;
  /** Resolves once its agent role runs; rejects with why it could not start (the thread is then ended). */
  readonly ready: Promise<void>;

  /** Replies the thread waits for, each with what tells it the settlement (`delivery` calls it); forgotten when it ends. */
  readonly #waits = new Map<string, (settlement: ReplySettlement) => void>();

  /**
   * `delivery` takes the reply targets its pushes claimed for this thread's delivery (see `deliveryRoom`),
   * and tells it the settlements of the replies it waits for.
   */
  constructor(
    data: AgentThreadData,
    private readonly delivery: ThreadDelivery,
  ) {
    this.#worker = new Worker(threadEntry(), { workerData: data });
    // Always listened to: an error event nobody listens to would end the whole process.
    this.#worker.on("error", (error) => {
      this.error = error;
    });
    this.exited = new Promise((resolve) => this.#worker.once("exit", resolve));
    // An ended thread answers nothing: every question still waiting gets no answer.
    void this.exited.then(() => {
      this.#ended = true;
      for (const resolve of this.#pending.values()) resolve(undefined);
      this.#pending.clear();
      for (const [replyId, tell] of this.#waits) this.delivery.stopWaitingElsewhere(replyId, tell);
      this.#waits.clear();
    });
    this.ready = this.#starting(data.index).catch(async (error: unknown) => {
      await this.#worker.terminate();
      throw error;
    });
    // Whoever awaits `ready` hears of a failed start; nobody else has to.
    this.ready.catch(() => {});
  }

  #starting(index: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#worker.on("message", (message: AgentThreadMessage) => {
        if (message.kind === "claimed") this.delivery.adopt(message.claim);
        else if (message.kind === "waiting" || message.kind === "done") this.#waiting(message);
        else if (message.kind === "answer") this.#pending.get(message.id)?.(message.value);
        else if (message.kind === "failed") reject(new HubError("agent_thread", message.error));
        else {
          this.started = true;
          resolve();
        }
      });
      void this.exited.then((code) =>
        reject(
          this.error ??
            new HubError("agent_thread", `agent thread ${index} ended at its start (exit code ${code})`),
        ),
      );
    });
  }

  // The thread begins or stops waiting for a reply: told its settlement in memory when this thread's delivery
  // settles it (see SettleRelay).
  #waiting({ kind, replyId }: { kind: "waiting" | "done"; replyId: string }): void {
    const known = this.#waits.get(replyId);
    if (kind === "done" || this.#ended) {
      this.#waits.delete(replyId);
      if (known) this.delivery.stopWaitingElsewhere(replyId, known);
      return;
    }
    if (known) return;
    const tell = (settlement: ReplySettlement) => {
      if (this.#waits.get(replyId) === tell) this.#waits.delete(replyId);
      this.#post({ kind: "settled", replyId, settlement });
    };
    this.#waits.set(replyId, tell);
    this.delivery.waitElsewhere(replyId, tell);
  }

  #post(message: ToAgentThread): void {
    if (!this.#ended) this.#worker.postMessage(message);
  }

  /** Asks the thread; undefined when it does not answer within `timeoutMs` (or has ended, or failed to). */
  async ask<T>(
    ask: AgentThreadRequest["ask"],
    timeoutMs = ASK_TIMEOUT_MS,
    by?: number,
  ): Promise<T | undefined> {
    if (this.#ended || !this.started) return undefined;
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

  /** Hands the thread a session the main thread's admission claimed for its runner (lost if it has ended). */
  claimed(claim: ClaimedKey): void {
    this.#post({ kind: "session", claim });
  }

  /** Ends the thread now (what is left of its runs resumes through the session lane's recovery). */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }
}
