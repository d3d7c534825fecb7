import { endGivenUpRun, type GivenUpDeps, RunControl } from "@hub/agent";
import type { HubLogger, RunRequest } from "@hub/core";
import type { ReplyDispatcher } from "@hub/reply";
import {
  ApprovalStore,
  FileSessionStore,
  keepGenerationClock,
  RedisSessionStore,
  type RunRecords,
  RunSteps,
  runActivityTtlMs,
  SessionActivity,
  SessionAdmission,
  SessionLane,
  type SessionStore,
  SessionWriters,
} from "@hub/sessions";
import { MeteredRunRecords } from "../metrics.js";
import type { HubBase } from "./base.js";

/**
 * Stage 3, session: which session a message belongs to and who may write it.
 * The session lane (one run per session at a time, across processes), the
 * transcripts, run records, writer claims, live activity, approvals, and the
 * control channel that stops a run wherever it runs.
 */
export interface SessionStage {
  lane: SessionLane;
  /** How a run the lane gives up on has its acknowledgement reaction taken off (the agent role sets it). */
  onGivenUp(unacknowledge: NonNullable<GivenUpDeps["unacknowledge"]>): void;
  sessions: SessionStore;
  runs: RunRecords;
  writers: SessionWriters;
  /** A run's start and end, each one atomic step over the records, activity and claims above. */
  steps: RunSteps;
  /**
   * A message's admission into its session in one atomic step. A run this process's runner (or an agent
   * thread's, see `SessionLane.addRemoteRunner`) takes at once is begun in that step (one step less per
   * message).
   */
  admission: SessionAdmission;
  activity: SessionActivity;
  approvals: ApprovalStore;
  control: RunControl;
  /** The latest model failover decision (JSON), kept in Redis for /status in any process. */
  lastModelDecision(): Promise<string | undefined>;
  recordModelDecision(decision: unknown): void;
  /** Settles once Redis's clock was first read for the claims' generations (at most a second): waited for before any claim. */
  clockRead: Promise<void>;
}

// The session lanes of this process (one commands connection: a message's steps issued in one turn share a
// write); `giveUp` ends a request the lane gave up on.
function sessionLane(
  base: HubBase,
  giveUp: (request: RunRequest, log: HubLogger) => Promise<void>,
): SessionLane {
  const { config } = base;
  const logger = base.logger.child({ component: "lane" });
  return new SessionLane({
    redisUrl: config.redis.url,
    redis: base.redis,
    prefix: config.redis.prefix,
    logger,
    leaseMs: base.tuning.leaseMs ?? config.agent.laneLeaseMs,
    ...base.mailbox,
    onFailed: (request) =>
      giveUp(request, logger.child({ runId: request.runId, sessionKey: request.ctx.sessionKey })),
  });
}

/** Builds the session layer; a request the lane gives up on gets a recorded failure, never silence. */
export function buildSessionStage(base: HubBase, replies: ReplyDispatcher): SessionStage {
  const { config, redis, events } = base;
  // Set by the agent role, which has the channels' live features (the reactions).
  const givenUp: Pick<GivenUpDeps, "unacknowledge"> = {};
  const prefix = config.redis.prefix;
  const runs = new MeteredRunRecords(redis, prefix, base.operations.metrics);
  const writers = new SessionWriters(redis, prefix);
  // Claims take their generations on Redis's clock: hubs on machines whose clocks differ share one order.
  const clock = keepGenerationClock(redis, prefix, base.logger.child({ component: "sessions" }));
  base.shutdown.rest.push(() => clock.stop());
  const sessions = sessionStoreOf(base);
  // What was steered into a run the lane gives up on, taken or not, runs as follow-ups (those it wrote fail
  // with it); `activity` is read when a run is given up, after it is built below.
  const lane = sessionLane(base, (request, log) =>
    endGivenUpRun(
      {
        runs,
        sessions,
        activity,
        writers,
        replies,
        events,
        closeLeftPreview: (runId) => replies.closeLeftPreview(runId),
        unacknowledge: givenUp.unacknowledge,
      },
      request,
      log,
    ),
  );
  base.shutdown.rest.push(() => lane.close());
  // A run's end moves the messages steered into it that it never took to the lane in one step.
  const activity = new SessionActivity(redis, prefix, config.agent.queueMode, { lane });
  const decisionsKey = `${prefix}:model-decisions`;
  const control = new RunControl(redis, prefix, runs);
  const steps = new RunSteps(redis, runs, writers, activity);
  const runTimeoutMs = config.agent.runTimeoutSeconds * 1000;
  return {
    lane,
    sessions,
    runs,
    writers,
    steps,
    admission: new SessionAdmission(redis, prefix, lane, config.agent.queueMode, {
      steps,
      timeoutMs: runTimeoutMs,
      activeTtlMs: runActivityTtlMs(runTimeoutMs),
    }),
    activity,
    approvals: new ApprovalStore(redis, prefix),
    control,
    clockRead: clock.firstRead,
    onGivenUp: (unacknowledge) => {
      givenUp.unacknowledge = unacknowledge;
    },
    lastModelDecision: async () => (await redis.lindex(decisionsKey, 0)) ?? undefined,
    recordModelDecision: (decision) =>
      void redis
        .multi()
        .lpush(decisionsKey, JSON.stringify(decision))
        .ltrim(decisionsKey, 0, 19)
        .exec()
        .catch(() => {}),
  };
}

/** The configured session store: files in the state dir (default) or Redis (`sessions.store`). */
export function sessionStoreOf(
  base: Pick<HubBase, "config" | "redis" | "stateDir" | "logger">,
): SessionStore {
  const logger = base.logger.child({ component: "sessions" });
  return base.config.sessions.store === "redis"
    ? new RedisSessionStore(base.redis, base.config.redis.prefix, logger)
    : new FileSessionStore(base.stateDir, logger);
}
