import type { RunRequest } from "@hub/core";
import { createRedis, type MailboxWorker, type WorkerRoom } from "@hub/queue";
import type { LaneHandOut, RunRecords, SessionLane } from "@hub/sessions";
import type { Redis } from "ioredis";
import { z } from "zod";
import { LeaseLostError, RunStopError } from "./run-errors.js";
import type { AgentRunner } from "./runner.js";

const StopMessageSchema = z.object({ runId: z.string(), status: z.enum(["aborted", "superseded"]) });

/**
 * How a process asks whichever process runs a run to stop it: Redis pub/sub for a run in flight, plus a
 * mark in the run's record for one not started yet (or resumed later), read by its first step.
 */
export class RunControl {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly runs: Pick<RunRecords, "markStop" | "stopMark">,
  ) {}

  /** Asks for the stop; false when no such run is recorded (it never existed, or its record expired). */
  async stop(runId: string, status: "aborted" | "superseded"): Promise<boolean> {
    const marked = await this.runs.markStop(runId, status);
    await this.redis.publish(`${this.prefix}:run-stop`, JSON.stringify({ runId, status }));
    return marked;
  }

  /** The stop marked for a run, read from its record (for when an announcement may have been missed). */
  async markedStop(runId: string): Promise<"aborted" | "superseded" | undefined> {
    return this.runs.stopMark(runId);
  }
}

/**
 * Stops announced for runs this process was not running (yet), kept a minute: a run admission began in
 * its own step for this process may hear its stop before its runner has started it.
 */
class EarlyStops {
  readonly #stops = new Map<string, { status: "aborted" | "superseded"; at: number }>();

  note(runId: string, status: "aborted" | "superseded"): void {
    const now = Date.now();
    for (const [id, stop] of this.#stops) {
      if (now - stop.at < 60_000) break;
      this.#stops.delete(id);
    }
    // Deleted first, so the map stays in time order (the pruning above stops at the first fresh one).
    this.#stops.delete(runId);
    this.#stops.set(runId, { status, at: now });
  }

  take(runId: string): "aborted" | "superseded" | undefined {
    const stop = this.#stops.get(runId);
    this.#stops.delete(runId);
    return stop?.status;
  }
}

/**
 * The stops this process hears (Redis pub/sub): a run in flight here is aborted at once, a stop for a run
 * not started here yet is kept for its start (see EarlyStops).
 */
class StopListener {
  readonly #active = new Map<string, AbortController>();
  readonly #early = new EarlyStops();
  readonly #subscriber: ReturnType<typeof createRedis>;
  // Announcements published while the subscriber was away are lost: until a while after it is back,
  // a starting run reads its stop mark itself (begin does, except for a run admission began).
  #heardSince = 0;
  #connected = false;

  constructor(
    redisUrl: string,
    private readonly control: RunControl,
  ) {
    this.#subscriber = createRedis(redisUrl);
    this.#subscriber.on("ready", () => {
      if (this.#connected) {
        this.#heardSince = Date.now();
        void this.#recheckActive();
      }
      this.#connected = true;
    });
    this.#subscriber.on("message", (_channel: string, message: string) => {
      const parsed = StopMessageSchema.safeParse(JSON.parse(message));
      if (!parsed.success) return;
      const { runId, status } = parsed.data;
      const running = this.#active.get(runId);
      if (running) running.abort(new RunStopError(status));
      else this.#early.note(runId, status);
    });
  }

  async listen(prefix: string): Promise<void> {
    await this.#subscriber.subscribe(`${prefix}:run-stop`);
  }

  /**
   * A starting run's controller, aborted already when a stop for it was heard before, or (while
   * announcements may have been missed) is marked in its record.
   */
  async starting(runId: string): Promise<AbortController> {
    const controller = new AbortController();
    this.#active.set(runId, controller);
    const missed = this.#subscriber.status !== "ready" || Date.now() - this.#heardSince < 10_000;
    const stop = this.#early.take(runId) ?? (missed ? await this.#markedStop(runId) : undefined);
    if (stop) controller.abort(new RunStopError(stop));
    return controller;
  }

  ended(runId: string, controller: AbortController): void {
    if (this.#active.get(runId) === controller) this.#active.delete(runId);
  }

  // Back after an outage: the runs in flight here read their stop marks (announcements were lost).
  async #recheckActive(): Promise<void> {
    for (const [runId, controller] of this.#active) {
      const stop = await this.#markedStop(runId);
      if (stop) controller.abort(new RunStopError(stop));
    }
  }

  // Redis failing here is no stop (a run not begun in admission reads its mark in begin anyway).
  async #markedStop(runId: string): Promise<"aborted" | "superseded" | undefined> {
    return this.control.markedStop(runId).catch(() => undefined);
  }

  close(): void {
    this.#subscriber.disconnect();
  }
}

/** Starts the agent role: recovery, then the session-lane runner with stop control. */
export async function startAgentRole(deps: {
  runner: AgentRunner;
  lane: SessionLane;
  control: RunControl;
  redisUrl: string;
  prefix: string;
  maxConcurrentRuns: number;
  recover: () => Promise<unknown>;
  /** The runner's room as the main thread sees it, on an agent thread (its admission claims sessions for it). */
  room?: WorkerRoom | undefined;
}): Promise<{ worker: MailboxWorker; close: () => Promise<void> }> {
  const stops = new StopListener(deps.redisUrl, deps.control);
  await stops.listen(deps.prefix);
  await deps.recover();
  const worker = deps.lane.startRunner(
    async (request: RunRequest, handOut: LaneHandOut) => {
      // A stop asked for before the run started is read in the run's first step (RunSteps.begin), except for
      // a run admission began itself (its runner starts it at once): a stop announced just before is here.
      const controller = await stops.starting(request.runId);
      // A lost lane lease means another process now runs this session: stop writing (or never start).
      let laneLost = false;
      const unlisten = handOut.onLost(() => {
        laneLost = true;
        controller.abort(new LeaseLostError());
      });
      try {
        if (!laneLost) await deps.runner.run(request, controller, handOut);
      } finally {
        stops.ended(request.runId, controller);
        unlisten();
      }
    },
    { maxConcurrentRuns: deps.maxConcurrentRuns, room: deps.room },
  );
  return {
    worker,
    close: async () => {
      stops.close();
    },
  };
}
