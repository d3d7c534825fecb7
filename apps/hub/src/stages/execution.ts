import { join } from "node:path";
import {
  AgentRunner,
  type AgentRunnerOptions,
  createToolAccess,
  INTERRUPTED_NOTICE,
  isFailover,
  recoverInterruptedRuns,
  sessionStatus,
  startAgentRole,
  tellUnanswered,
  unacknowledgeFinalized,
} from "@hub/agent";
import type { HubLogger, RunRequest } from "@hub/core";
import type { WorkerRoom } from "@hub/queue";
import type { ReplyDispatcher } from "@hub/reply";
import { withAckLedger } from "../ack-ledger.js";
import { liveFeatures } from "../live-features.js";
import { buildMediaPreparer, startMediaStore } from "../media.js";
import { createModelResolver } from "../models.js";
import { hubOutbox } from "../outbox.js";
import type { HubBase } from "./base.js";
import type { EntryStage } from "./entry.js";
import type { SessionStage } from "./session.js";

/**
 * Stage 4, execution (a process with the `agent` role): restart recovery,
 * then the session lane's runner with bounded concurrency, where each run
 * claims its session, runs the model and tools, and hands its reply to
 * settlement. On an agent thread, `room` is its runner's room as the main thread sees it (the main
 * thread's admission claims sessions for it: see `SessionLane.addRemoteRunner`).
 */
export async function startExecution(
  base: HubBase,
  entry: EntryStage,
  replies: ReplyDispatcher,
  s: SessionStage,
  room?: WorkerRoom,
): Promise<void> {
  const { config, logger } = base;
  const runTimeoutMs = config.agent.runTimeoutSeconds * 1000;
  const agentLog = logger.child({ component: "agent" });
  const reactions = withAckLedger(liveFeatures(config, entry.adapters), {
    redis: base.redis,
    prefix: config.redis.prefix,
    runs: s.runs,
    settled: (replyId, signal) => replies.settled(replyId, signal),
    runTimeoutMs,
    logger: agentLog,
  });
  s.onGivenUp((request, log) => unacknowledgeFinalized(reactions.live, request.ctx, log, request.runId));
  const runner = agentRunner(base, entry, replies, s, {
    runTimeoutMs,
    logger: agentLog,
    live: reactions.live,
  });
  const role = await startAgentRole({
    runner,
    lane: s.lane,
    control: s.control,
    redisUrl: config.redis.url,
    prefix: config.redis.prefix,
    maxConcurrentRuns: config.agent.maxConcurrentRuns,
    room,
    recover: async () => {
      const recovered = await recoverAtStart(s, { replies, events: base.events }, runTimeoutMs, agentLog);
      // After recovery decided which runs resume (those put their reaction on again and take it off).
      reactions.removeLeft();
      return recovered;
    },
  });
  base.shutdown.workers.push(role.worker);
  base.operations.watchWorker("agent", role.worker);
  base.shutdown.rest.push(role.close);
}

/** What the runner takes from the execution stage itself: the run timeout, its logger, live reactions. */
type RunnerSettings = Pick<AgentRunnerOptions, "runTimeoutMs" | "logger" | "live">;

// The runner, wired from config: sessions and runs from the session stage, models and tools from config,
// typing and capabilities from the channel adapters.
function agentRunner(
  base: HubBase,
  entry: EntryStage,
  replies: ReplyDispatcher,
  s: SessionStage,
  settings: RunnerSettings,
): AgentRunner {
  const { config } = base;
  const workspace = config.agent.workspace ?? join(base.stateDir, "workspace");
  const statusText = (sessionKey: string) =>
    sessionStatus(
      { config, activity: s.activity, sessions: s.sessions, lastModelDecision: s.lastModelDecision },
      sessionKey,
    );
  return new AgentRunner({
    ...settings,
    agentId: config.agent.id,
    sessions: s.sessions,
    runs: s.runs,
    writers: s.writers,
    steps: s.steps,
    connection: base.redis,
    replies,
    closeLeftPreview: (runId) => replies.closeLeftPreview(runId),
    events: base.events,
    announcements: base.announcements,
    resolveModel: base.operations.metrics.meterModels(
      // /status shows the latest failover: an error surfaced to one chat is that chat's, not the hub's.
      createModelResolver(config, settings.logger, (decision) => {
        if (isFailover(decision)) s.recordModelDecision(decision);
      }),
    ),
    modelRef: config.agent.model,
    toolsFor: createToolAccess(config, {
      workspace,
      statusText,
      replies,
      outbox: hubOutbox(base),
      maxAttachmentBytes: config.limits.maxAttachmentBytes,
    }),
    workspaceDir: workspace,
    bootstrapLimits: config.agent.bootstrap,
    contextWindowTokens: config.agent.contextWindowTokens,
    approvals: s.approvals,
    systemPrompt: config.agent.systemPrompt,
    supersede: async (runId) => void (await s.control.stop(runId, "superseded")),
    activity: s.activity,
    dataLost: (since) => base.epoch.lostSince(since),
    typing: async (target) => entry.adapters.forAccount(target.channel, target.accountId)?.sendTyping(target),
    capabilitiesOf: (channel) => entry.adapters.forChannel(channel)?.capabilities,
    media: buildMediaPreparer(config, base.stateDir, entry.adapters, startMediaStore(base)),
    outbox: hubOutbox(base),
    maxAttachmentBytes: config.limits.maxAttachmentBytes,
  });
}

// Before the runner starts: queue modes of the earlier layout moved (once per installation; a failure is
// said and tried again at the next start), the dead predecessor's sessions freed at once, then recovery.
async function recoverAtStart(
  s: SessionStage,
  notices: { replies: ReplyDispatcher; events: HubBase["events"] },
  runTimeoutMs: number,
  log: HubLogger,
) {
  const { runs, sessions, lane, activity, writers } = s;
  try {
    const adopted = await activity.adoptOldQueueModes();
    if (adopted > 0) log.info({ adopted }, "moved sessions' queue modes into their writer records");
  } catch (error) {
    log.warn({ err: error }, "could not move sessions' queue modes; tried again at the next start");
  }
  await lane.reclaimDeadPredecessors();
  const closeLeftPreview = (runId: string) => notices.replies.closeLeftPreview(runId);
  // The reactions of the runs it finalizes come off with the others left (removeLeft), not after the notice.
  const tell = (request: RunRequest, runLog: HubLogger) =>
    tellUnanswered(notices, request, INTERRUPTED_NOTICE, runLog);
  const deps = { runs, sessions, lane, activity, writers, closeLeftPreview, tell };
  return recoverInterruptedRuns({ ...deps, runTimeoutMs, logger: log });
}
