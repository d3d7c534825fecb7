import { type AgentRunner, LeaseLost, RunStop } from "@hub/agent";
import type { HubLogger, RunRequest } from "@hub/core";
import { createRedis, type MailboxWorker } from "@hub/queue";
import {
  type RunRecords,
  recoveryDecision,
  type SessionActivity,
  type SessionLane,
  type SessionStore,
} from "@hub/sessions";
import type { Redis } from "ioredis";
import { z } from "zod";

const StopMessageSchema = z.object({ runId: z.string(), status: z.enum(["aborted", "superseded"]) });

/** How a process asks whichever process runs a run to stop it (Redis pub/sub plus a mark for runs not started yet). */
export class RunControl {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async stop(runId: string, status: "aborted" | "superseded"): Promise<void> {
    await this.redis.set(`${this.prefix}:stop:${runId}`, status, "EX", 3600);
    await this.redis.publish(`${this.prefix}:run-stop`, JSON.stringify({ runId, status }));
  }

  async pending(runId: string): Promise<"aborted" | "superseded" | undefined> {
    const mark = await this.redis.get(`${this.prefix}:stop:${runId}`);
    return mark === "aborted" || mark === "superseded" ? mark : undefined;
  }
}

/**
 * Restart recovery, once at start with one frozen scan time: every run still
 * marked running whose session has no live runner is either finalized as
 * `interrupted` by its exact runId (stale, or out of attempts; no model call,
 * no message) or left to be resumed once when its session lane wakes it.
 * A fresh run of the same session is never touched: decisions are per runId
 * and per attempt.
 */
export async function recoverInterruptedRuns(deps: {
  runs: RunRecords;
  sessions: SessionStore;
  lane: SessionLane;
  /** When given, messages steered into a finalized run are queued as follow-ups. */
  activity?: SessionActivity;
  runTimeoutMs: number;
  logger: HubLogger;
  scanTime?: number;
}): Promise<{ finalized: string[]; resumable: string[] }> {
  const scanTime = deps.scanTime ?? Date.now();
  const finalized: string[] = [];
  const resumable: string[] = [];
  for (const record of await deps.runs.running()) {
    if (await deps.lane.isBusy(record.sessionKey)) continue;
    const log = deps.logger.child({ runId: record.runId, sessionKey: record.sessionKey });
    if (recoveryDecision(record, scanTime, deps.runTimeoutMs) === "finalize") {
      const done = await deps.runs.finish(
        record.runId,
        { status: "interrupted", error: "interrupted by a restart; not resumed" },
        record.attempt,
      );
      if (done) {
        const session = await deps.sessions.get(record.sessionKey);
        if (session)
          await deps.sessions.append(session.sessionId, [
            { type: "outcome", runId: record.runId, status: "interrupted", at: Date.now() },
          ]);
        finalized.push(record.runId);
        await deps.activity?.end(record.sessionKey, record.runId, (left) => deps.lane.enqueue(left));
        log.warn(
          { startedAt: record.startedAt, attempt: record.attempt },
          "stale interrupted run finalized at start",
        );
      }
    } else {
      resumable.push(record.runId);
      log.info({ attempt: record.attempt }, "interrupted run will be resumed by its session lane");
    }
  }
  return { finalized, resumable };
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
  const subscriber = createRedis(deps.redisUrl);
  subscriber.on("message", (_channel: string, message: string) => {
    const parsed = StopMessageSchema.safeParse(JSON.parse(message));
    if (parsed.success) active.get(parsed.data.runId)?.abort(new RunStop(parsed.data.status));
  });
  await subscriber.subscribe(`${deps.prefix}:run-stop`);
  await deps.recover();
  const worker = deps.lane.startRunner(
    async (request: RunRequest, laneSignal: AbortSignal) => {
      const controller = new AbortController();
      // A lost lane lease means another process now runs this session: stop writing.
      const onLane = () => controller.abort(new LeaseLost());
      laneSignal.addEventListener("abort", onLane);
      active.set(request.runId, controller);
      try {
        const pending = await deps.control.pending(request.runId);
        if (pending) controller.abort(new RunStop(pending));
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
