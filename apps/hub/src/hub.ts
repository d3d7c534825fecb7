import {
  type ChannelAdapter,
  type ChannelPlugin,
  type HubConfig,
  HubError,
  type HubLogger,
  type ReplySettlement,
} from "@hub/core";
import type { InboundDispatcher } from "@hub/dispatch";
import type { ClaimedKey, RemoteWorker, WorkerRoom } from "@hub/queue";
import type { ReplyDispatcher, SettleRelay } from "@hub/reply";
import { takeClaimedSession } from "@hub/sessions";
import { AgentThreads } from "./agent-threads.js";
import { type ProbeAddress, startHealthServer } from "./health-server.js";
import type { HubOperations } from "./operations.js";
import { announceProcess } from "./process-registry.js";
import { startAdmission } from "./stages/admission.js";
import { connectBase, type HubBase, type HubTuning, shutdownBase } from "./stages/base.js";
import { buildEntry, type EntryStage } from "./stages/entry.js";
import { startExecution } from "./stages/execution.js";
import { buildSessionStage, type SessionStage } from "./stages/session.js";
import { startSettlement } from "./stages/settlement.js";
import type { ChannelReport } from "./supervisor.js";

export type { HubTuning } from "./stages/base.js";

/** A running hub (or one role of it). */
export interface RunningHub {
  /** The gateway's bound port (0 when this process runs no ingress role). */
  port: number;
  /** Where this process answers /healthz and /readyz: its gateway, or (without ingress) its health listener. */
  probes: ProbeAddress;
  token: string;
  dispatcher: InboundDispatcher | undefined;
  replies: ReplyDispatcher;
  /** The state of every channel account this process runs (connecting, connected, reconnecting, failed). */
  channels(): ChannelReport[];
  /** Resolves once every channel's first connection attempt is over (channels never delay the start). */
  channelsSettled(): Promise<void>;
  /** Metrics, readiness, draining and reload (see operations.ts). */
  operations: HubOperations;
  /**
   * Stops the process's part of the hub. `by` (epoch ms): when the caller stops waiting (the drain budget's
   * end plus its grace); run ends still waiting for their replies are announced in time for it.
   */
  stop(options?: { by?: number }): Promise<void>;
}

/** How the app starts a hub: where its state lives, its gateway token, and (for tests) adapters and tuning. */
export interface StartHubOptions {
  stateDir: string;
  token: string;
  logger: HubLogger;
  tuning?: HubTuning;
  /** Channel adapters besides the built-in web chat (default: built from config by the installed plugins). */
  adapters?: ChannelAdapter[];
  /** The installed channel plugins (default: the hub's list in plugins.ts). */
  plugins?: ReadonlyArray<ChannelPlugin>;
  /** Agent threads (`agent.threads`): the config file SIGHUP reads, and a file for their log lines instead of standard output. */
  agentThreads?: { configPath?: string | undefined; logFile?: string | undefined };
}

/**
 * Wires the hub from config, stage by stage in the order a message passes
 * them (shared/DESIGN.md): entry (adapters), admission (dedupe, access,
 * atomic admission; the gateway), session (lanes, transcripts, writer
 * claims), execution (the agent run), settlement (ordered delivery). Which
 * stages run here follows the process's roles (`ingress`, `agent`,
 * `delivery`); they share nothing but Redis, so roles can run in separate processes.
 */
export async function startHub(config: HubConfig, options: StartHubOptions): Promise<RunningHub> {
  const base = await connectBase(config, options);
  const entry = await buildEntry(base, options);
  const replies = await startSettlement(base, entry);
  const session = buildSessionStage(base, replies);
  await session.clockRead;
  if (base.roles.has("agent")) await startAgentRole(base, { entry, replies, session }, options);
  const ingress = base.roles.has("ingress")
    ? await startAdmission(base, entry, replies, session, options.token)
    : undefined;
  const probes = ingress
    ? { host: config.gateway.host, port: ingress.gateway.port }
    : await startHealthServer(base, options.token);
  // Last registered, so first removed at the stop: `hub status` stops counting this process at once.
  base.shutdown.rest.push(announceProcess(base.redis, config.redis.prefix, config.roles));
  return {
    port: ingress?.gateway.port ?? 0,
    probes,
    token: options.token,
    dispatcher: ingress?.dispatcher,
    replies,
    channels: () => ingress?.supervisor.statuses() ?? [],
    channelsSettled: () => ingress?.supervisor.firstAttempts() ?? Promise.resolve(),
    operations: base.operations,
    stop: (options) => shutdownBase(base, options?.by),
  };
}

// The agent role here, or on `agent.threads` worker threads of this process (each builds its own stages from
// the config, as an `agent` process would: the installed plugins' adapters, not ones a test hands in).
async function startAgentRole(
  base: HubBase,
  stages: { entry: EntryStage; replies: ReplyDispatcher; session: SessionStage },
  options: StartHubOptions,
): Promise<void> {
  const { config, operations } = base;
  if (config.agent.threads === 0) return startExecution(base, stages.entry, stages.replies, stages.session);
  if (options.adapters || options.plugins)
    throw new HubError(
      "agent_threads",
      "agent.threads runs the agent role on threads that build their channel adapters from the config; start the hub without adapters or plugins of its own, or with agent.threads 0",
    );
  const threads = await AgentThreads.start(
    config.agent.threads,
    {
      config,
      stateDir: base.stateDir,
      token: options.token,
      log: { level: base.logger.level, file: options.agentThreads?.logFile },
      configPath: options.agentThreads?.configPath,
      deliveryRoom: stages.replies.deliveryRoom,
    },
    stages.replies,
    base.logger,
  );
  // Stopped before delivery (workers stop last registered first), as the runs' worker is.
  base.shutdown.workers.push(threads);
  operations.addAgentThreads(threads);
  // This thread's admission claims sessions for the threads' runners (and begins their runs) in its step.
  for (const runner of threads.runners()) stages.session.lane.addRemoteRunner(runner);
}

/** The agent role as one agent thread of a hub process runs it (agent-thread.ts). */
export interface AgentThreadRole {
  /** The thread's own metrics and runs in flight, and its SIGHUP reload. */
  operations: HubOperations;
  /** Runs a session the main thread's admission claimed for its runner (see `AgentThreads.runners`). */
  takeSession(claim: ClaimedKey): void;
  /** A reply's settlement, told by the main thread's delivery (see `SettleRelay`). */
  settledElsewhere(replyId: string, settlement: ReplySettlement): void;
  /** Whether its runner takes work (and Redis answers). */
  running(): Promise<boolean>;
  stop(by?: number): Promise<void>;
}

/** Starts the agent role alone, on an agent thread (its own Redis connections, stages and metrics). */
export async function startAgentThreadRole(
  config: HubConfig,
  options: {
    stateDir: string;
    logger: HubLogger;
    remoteDelivery: RemoteWorker | undefined;
    settleRelay: SettleRelay | undefined;
    laneRoom: WorkerRoom;
  },
): Promise<AgentThreadRole> {
  const { remoteDelivery, settleRelay, laneRoom, ...rest } = options;
  const base = await connectBase({ ...config, roles: ["agent"] }, { ...rest, agentThread: true });
  const entry = await buildEntry(base, {});
  const replies = await startSettlement(base, entry, { remoteDelivery, settleRelay });
  const session = buildSessionStage(base, replies);
  await session.clockRead;
  await startExecution(base, entry, replies, session, laneRoom);
  return {
    operations: base.operations,
    takeSession: (claim) => takeClaimedSession(claim, session.lane, session.steps),
    settledElsewhere: (replyId, settlement) => replies.settledElsewhere(replyId, settlement),
    running: async () => (await base.operations.readiness([])).ready,
    stop: (by) => shutdownBase(base, by),
  };
}
