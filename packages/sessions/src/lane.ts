import { type HubLogger, type RunRequest, RunRequestSchema } from "@hub/core";
import {
  type AckStep,
  type ClaimedKey,
  type DrainHereSlot,
  type MailboxTuning,
  type MailboxWorker,
  OrderedMailbox,
  type RemoteWorker,
  type WorkerRoom,
} from "@hub/queue";
import type { Redis } from "ioredis";
import { SESSION_LANE_NAME } from "./run-records.js";

/** Options of the session lane. */
export interface SessionLaneOptions extends MailboxTuning {
  redisUrl: string;
  /** A commands connection to share with the rest of the process (see `OrderedMailboxOptions.redis`). */
  redis?: Redis | undefined;
  prefix: string;
  logger: HubLogger;
  /** A request the lane gave up on (its runner kept crashing): record its outcome so nobody waits forever. */
  onFailed?: (request: RunRequest) => Promise<void>;
}

/** How the lane handed a request to its runner. */
export interface LaneHandOut {
  /** 1 the first time the request is handed out (a start made for it in the hand-out's step holds). */
  attempt: number;
  /** Aborted when this process lost the session's lane: another process runs the session now. Made when read. */
  readonly signal: AbortSignal;
  /** Calls `listener` once when this process loses the session's lane (at once if it has); see `DrainContext.onLost`. */
  onLost(listener: (reason: unknown) => void): () => void;
  /** The request's ack, for the runner's last step (see `DrainContext.ackStep`, `RunSteps.settle`). */
  ackStep(): AckStep;
}

/**
 * The session lane: run requests queued per sessionKey in Redis and executed
 * one at a time per session, in arrival order, across every agent process.
 * The global lane is the worker's concurrency (at most N sessions run at once
 * in one process). Built on the same ordered mailbox as reply delivery: the
 * mailbox's owner lease is the session's lock, renewed while the run lives.
 */
export class SessionLane {
  readonly #mailbox: OrderedMailbox<RunRequest>;

  constructor(options: SessionLaneOptions) {
    this.#mailbox = new OrderedMailbox<RunRequest>({
      name: SESSION_LANE_NAME,
      redisUrl: options.redisUrl,
      redis: options.redis,
      prefix: options.prefix,
      logger: options.logger,
      parse: (raw) => RunRequestSchema.parse(raw),
      // A run is not retried by the lane: the runner records its own failure as a terminal outcome.
      maxAttempts: 3,
      // A session that keeps getting messages lets waiting sessions run after a few of its runs.
      burst: 4,
      onFailed: options.onFailed && ((item) => options.onFailed!(item.data)),
      leaseMs: options.leaseMs,
      sweepIntervalMs: options.sweepIntervalMs,
      graceMs: options.graceMs,
      slotWaitMs: options.slotWaitMs,
      instanceId: options.instanceId,
    });
  }

  /** Durably queues a request in its session's lane. */
  async enqueue(request: RunRequest): Promise<void> {
    await this.#mailbox.push(request.ctx.sessionKey, [{ id: request.runId, data: request }]);
  }

  /** The lane's Redis keys for a session, for admission's atomic step (see `OrderedMailbox.pushKeys`). */
  pushKeys(sessionKey: string): ReturnType<OrderedMailbox<RunRequest>["pushKeys"]> {
    return this.#mailbox.pushKeys(sessionKey);
  }

  /**
   * A runner slot of this process for admission's step to claim the session with (see
   * `OrderedMailbox.reserveDrainHere`): this thread's runner's, or one of an agent thread's.
   */
  reserveDrainHere(sessionKey: string): DrainHereSlot | undefined {
    return this.#mailbox.reserveDrainHere(sessionKey);
  }

  /** An agent thread's runner, which this thread's admission may claim sessions for (see `WorkerRoom`). */
  addRemoteRunner(runner: RemoteWorker): void {
    this.#mailbox.addRemoteWorker(runner);
  }

  /** Runs a session another thread's admission claimed for this thread's runner (see `OrderedMailbox.adopt`). */
  adopt(claim: ClaimedKey): void {
    this.#mailbox.adopt(claim);
  }

  /** Admission's step woke a session through the ready list (see `OrderedMailbox.wokeOnReady`). */
  wokeOnReady(): void {
    this.#mailbox.wokeOnReady();
  }

  /** A request as the lane stores it. */
  encode(request: RunRequest): string {
    return this.#mailbox.encode({ id: request.runId, data: request });
  }

  /** Executes queued runs in this process, at most `maxConcurrentRuns` sessions at once. */
  startRunner(
    run: (request: RunRequest, handOut: LaneHandOut) => Promise<void>,
    options: { maxConcurrentRuns: number; room?: WorkerRoom | undefined },
  ): MailboxWorker {
    return this.#mailbox.startWorker((item, ctx) => run(item.data, ctx), {
      concurrency: options.maxConcurrentRuns,
      room: options.room,
    });
  }

  /** Resumes at once the sessions this installation's dead previous process was running. */
  async reclaimDeadPredecessors(): Promise<string[]> {
    return this.#mailbox.reclaimDeadPredecessors();
  }

  /** Every request in a session's lane, the one in flight first (unreadable ones left out). */
  async queued(sessionKey: string): Promise<RunRequest[]> {
    return (await this.#mailbox.items(sessionKey)).map((item) => item.data);
  }

  /** The request at the head of a session's lane (the run in flight, or next). */
  async headRequest(sessionKey: string): Promise<RunRequest | undefined> {
    return (await this.#mailbox.head(sessionKey))?.data;
  }

  /** True while some process is running this session (its lane lease is alive). */
  async isBusy(sessionKey: string): Promise<boolean> {
    return this.#mailbox.hasDrainer(sessionKey);
  }

  async close(): Promise<void> {
    await this.#mailbox.close();
  }
}
