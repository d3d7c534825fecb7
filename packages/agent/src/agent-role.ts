import type { RunRequest } from "@hub/core";
import { createRedis, type MailboxWorker } from "@hub/queue";
import type { RunRecords, SessionLane } from "@hub/sessions";
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

  async stop(runId: string, status: "aborted" | "superseded"): Promise<void> {
    await this.runs.markStop(runId, status);
    await this.redis.publish(`${this.prefix}:run-stop`, JSON.stringify({ runId, status }));
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

/** Starts the agent role: recovery, then the session-lane runner with stop control. */
export async function startAgentRole(deps: {
  runner: AgentRunner;
  lane: SessionLane;
  control: RunControl;
  redisUrl: string;
  prefix: string;
  maxConcurrentRuns: number;
  recover: () => Promise<unknown>;
}): Promise<{ worker: MailboxWorker; close: () => Promise<void> }> {
  const active = new Map<string, AbortController>();
  const early = new EarlyStops();
  const subscriber = createRedis(deps.redisUrl);
  // Announcements published while the subscriber was away are lost: until a while after it is back,
  // a starting run reads its stop mark itself (begin does, except for a run admission began).
  let heardSince = 0;
  let connected = false;
  subscriber.on("ready", () => {
    if (connected) heardSince = Date.now();
    connected = true;
  });
  const mayHaveMissed = () => subscriber.status !== "ready" || Date.now() - heardSince < 10_000;
  subscriber.on("message", (_channel: string, message: string) => {
    const parsed = StopMessageSchema.safeParse(JSON.parse(message));
    if (!parsed.success) return;
    const { runId, status } = parsed.data;
    const running = active.get(runId);
    if (running) running.abort(new RunStopError(status));
    else early.note(runId, status);
  });
  await subscriber.subscribe(`${deps.prefix}:run-stop`);
  await deps.recover();
  const worker = deps.lane.startRunner(
    async (request: RunRequest, laneSignal: AbortSignal) => {
      const controller = new AbortController();
      // A lost lane lease means another process now runs this session: stop writing.
      const onLane = () => controller.abort(new LeaseLostError());
      laneSignal.addEventListener("abort", onLane);
      active.set(request.runId, controller);
      // A stop asked for before the run started is read in the run's first step (RunSteps.begin), except for
      // a run admission began itself (its runner starts it at once): a stop announced just before is here.
      const stoppedEarly =
        early.take(request.runId) ??
        (mayHaveMissed() ? await deps.control.markedStop(request.runId) : undefined);
      if (stoppedEarly) controller.abort(new RunStopError(stoppedEarly));
      try {
        await deps.runner.run(request, controller.signal);
      } finally {
        active.delete(request.runId);
        laneSignal.removeEventListener("abort", onLane);
      }
    },
    { maxConcurrentRuns: deps.maxConcurrentRuns },
  );
  return {
    worker,
    close: async () => {
      subscriber.disconnect();
    },
  };
}
