import { randomUUID } from "node:crypto";
import { join } from "node:path";
import {
  AgentRunner,
  assembleTools,
  createCommandHandler,
  currentTimeTool,
  groupMemoryDefault,
  httpFetchTool,
  type MemoryTrust,
  memoryTools,
  RunControl,
  recoverInterruptedRuns,
  sendMessageTool,
  sessionStatus,
  sessionStatusTool,
  startAgentRole,
  TOOL_PROFILES,
} from "@hub/agent";
import {
  type ChannelAccess,
  type ChannelAdapter,
  type ChannelPlugin,
  channelAccess,
  type HubConfig,
  type HubLogger,
  type MsgContext,
} from "@hub/core";
import { admitInbound, InboundDispatcher } from "@hub/dispatch";
import { ChatEventBus, GatewayServer, WebChatAdapter } from "@hub/gateway";
import { createRedis, type MailboxWorker, RedisEpoch } from "@hub/queue";
import { ReplyDispatcher } from "@hub/reply";
import {
  ApprovalStore,
  RunRecords,
  SessionActivity,
  SessionAdmission,
  SessionLane,
  SessionStore,
  SessionWriters,
} from "@hub/sessions";
import { webRoot } from "@hub/web";
import { AdapterRegistry } from "./adapter-registry.js";
import { buildChannelAdapters } from "./adapters.js";

import { createModelResolver } from "./models.js";
import { approvePairing, sendNotice } from "./pairing.js";
import { channelPlugins } from "./plugins.js";
import { instanceIdOf } from "./state.js";
import { type ChannelReport, ChannelSupervisor } from "./supervisor.js";

/**
 * Whose memory a run uses: the operator's only in a direct chat with someone
 * the operator named (the web chat's owner, or a sender listed in the
 * channel's `allowFrom`); paired strangers, web chat clients and groups get
 * untrusted notes.
 */
function memoryTrust(ctx: MsgContext, access: ChannelAccess | undefined): MemoryTrust {
  if (ctx.chat.type !== "direct") return "untrusted";
  if (ctx.channel === "webchat") return ctx.sender.id === "owner" ? "operator" : "untrusted";
  return access?.allowFrom.includes(ctx.sender.id) ? "operator" : "untrusted";
}

/** Knobs tests and benchmarks turn; production uses the defaults. */
export interface HubTuning {
  /** Mailbox lease (ms): how long a dead drainer holds a target or session. */
  leaseMs?: number;
  sweepIntervalMs?: number;
  graceMs?: number;
  deliveryConcurrency?: number;
  /** Backoff between a channel's connection attempts (default 1 s doubling to 60 s). */
  channelBackoff?: { initialMs: number; maxMs: number };
}

/** A running hub (or one role of it). */
export interface RunningHub {
  /** The gateway's bound port (0 when this process runs no ingress role). */
  port: number;
  token: string;
  dispatcher: InboundDispatcher | undefined;
  replies: ReplyDispatcher;
  /** The state of every channel account this process runs (connecting, connected, reconnecting, failed). */
  channels(): ChannelReport[];
  /** Resolves once every channel's first connection attempt is over (channels never delay the start). */
  channelsSettled(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Wires the hub from config: the roles this process runs (`ingress`: gateway
 * and adapters' inbound; `agent`: session lanes and runs; `delivery`: reply
 * workers), all sharing Redis so they can run in separate processes.
 */
export async function startHub(
  config: HubConfig,
  options: {
    stateDir: string;
    token: string;
    logger: HubLogger;
    tuning?: HubTuning;
    /** Channel adapters besides the built-in web chat (default: built from config by the installed plugins). */
    adapters?: ChannelAdapter[];
    /** The installed channel plugins (default: the hub's list in plugins.ts). */
    plugins?: ReadonlyArray<ChannelPlugin>;
  },
): Promise<RunningHub> {
  const { logger, tuning = {} } = options;
  const prefix = config.redis.prefix;
  const url = config.redis.url;
  const roles = new Set(config.roles);
  const redis = createRedis(url);
  const subscriber = createRedis(url);
  const events = new ChatEventBus(redis, prefix, logger);
  const epoch = new RedisEpoch(redis, prefix, logger.child({ component: "redis" }));
  await epoch.start();
  const webchat = new WebChatAdapter(events);
  const channelAdapters =
    options.adapters ??
    buildChannelAdapters(config, options.plugins ?? channelPlugins, {
      redis,
      prefix,
      logger,
      stateDir: options.stateDir,
    });
  const adapters = new AdapterRegistry([webchat, ...channelAdapters]);
  const instanceId = instanceIdOf(options.stateDir);
  const mailboxTuning = {
    instanceId,
    ...(tuning.leaseMs ? { leaseMs: tuning.leaseMs } : {}),
    ...(tuning.sweepIntervalMs ? { sweepIntervalMs: tuning.sweepIntervalMs } : {}),
    ...(tuning.graceMs ? { graceMs: tuning.graceMs } : {}),
  };
  const replies = new ReplyDispatcher({
    redisUrl: url,
    prefix,
    logger: logger.child({ component: "reply" }),
    capabilitiesOf: (channel) => adapters.forChannel(channel)?.capabilities,
    maxAttempts: config.delivery.maxAttempts,
    sendTimeoutMs: config.delivery.sendTimeoutMs,
    ...mailboxTuning,
    ...(tuning.leaseMs ? {} : { leaseMs: config.delivery.leaseMs }),
  });
  const lane = new SessionLane({
    redisUrl: url,
    prefix,
    logger: logger.child({ component: "lane" }),
    ...mailboxTuning,
    ...(tuning.leaseMs ? {} : { leaseMs: config.agent.laneLeaseMs }),
    onFailed: async (request) => {
      const error = "the run could not be executed (its runner failed repeatedly); see the hub's log";
      if (await runs.finish(request.runId, { status: "failed", error, stopReason: "internal_error" })) {
        await events.publish({
          runId: request.runId,
          sessionKey: request.ctx.sessionKey,
          seq: 0,
          state: "error",
          text: error,
        });
      }
      await activity.end(request.ctx.sessionKey, request.runId, (left) => lane.enqueue(left));
    },
  });
  const sessions = new SessionStore(options.stateDir, logger.child({ component: "sessions" }));
  const runs = new RunRecords(redis, prefix);
  const workers: MailboxWorker[] = [];
  const cleanups: Array<() => Promise<void> | void> = [];
  // Inbound stops first, so nothing new is admitted while the rest shuts down.
  const stopAdapters: Array<() => Promise<void>> = [];

  if (roles.has("delivery")) {
    workers.push(
      replies.startDelivery((channel, accountId) => adapters.forAccount(channel, accountId), {
        concurrency: tuning.deliveryConcurrency ?? 50,
      }),
    );
    await replies.reclaimDeadPredecessors();
  }

  const control = new RunControl(redis, prefix);
  const decisionsKey = `${prefix}:model-decisions`;
  const activity = new SessionActivity(redis, prefix, config.agent.queueMode);
  const approvals = new ApprovalStore(redis, prefix);
  const lastModelDecision = async () => (await redis.lindex(decisionsKey, 0)) ?? undefined;
  const statusText = (sessionKey: string) =>
    sessionStatus({ config, activity, sessions, lastModelDecision }, sessionKey);
  const toolConfig = config.agent.tools;
  const availableTools = [
    currentTimeTool,
    sessionStatusTool(statusText),
    ...(toolConfig.httpFetchHosts.length
      ? [
          httpFetchTool({
            allowHosts: toolConfig.httpFetchHosts,
            ports: toolConfig.httpFetchPorts,
            allowPrivate: toolConfig.httpFetchAllowPrivate,
          }),
        ]
      : []),
    ...(Object.keys(toolConfig.sendTargets).length
      ? [
          sendMessageTool(toolConfig.sendTargets, async (name, text, runId) => {
            const target = toolConfig.sendTargets[name]!;
            const reply = replies.open(`${runId}.send.${randomUUID()}`, target);
            await reply.push(text);
            await reply.end();
          }),
        ]
      : []),
  ];
  const workspace = config.agent.workspace ?? join(options.stateDir, "workspace");
  const memory = {
    operator: memoryTools(workspace, "operator"),
    untrusted: memoryTools(workspace, "untrusted"),
  };
  const toolsFor = (ctx: MsgContext) => {
    const t = config.agent.tools;
    const access = channelAccess(config.channels, ctx.channel, ctx.accountId);
    const group =
      ctx.chat.type === "direct" ? undefined : (access?.groups[ctx.chat.id] ?? access?.groups["*"]);
    const levels = [t, access?.tools ?? {}, group?.tools ?? {}];
    levels.push(groupMemoryDefault(ctx.chat.type, [access?.tools, group?.tools]));
    const available = [...availableTools, ...memory[memoryTrust(ctx, access)]];
    return {
      tools: assembleTools(available, TOOL_PROFILES[t.profile], levels),
      approvals: t.approvals,
      approvalTimeoutMs: t.approvalTimeoutSeconds * 1000,
    };
  };
  if (roles.has("agent")) {
    const runTimeoutMs = config.agent.runTimeoutSeconds * 1000;
    const agentLog = logger.child({ component: "agent" });
    const runner = new AgentRunner({
      agentId: config.agent.id,
      sessions,
      runs,
      writers: new SessionWriters(redis, prefix),
      replies,
      events,
      resolveModel: createModelResolver(config, agentLog, (decision) => {
        // Kept in Redis so /status in any process can show the latest failover decisions.
        void redis
          .multi()
          .lpush(decisionsKey, JSON.stringify(decision))
          .ltrim(decisionsKey, 0, 19)
          .exec()
          .catch(() => {});
      }),
      modelRef: config.agent.model,
      toolsFor: (ctx) => toolsFor(ctx),
      workspaceDir: config.agent.workspace ?? join(options.stateDir, "workspace"),
      bootstrapLimits: config.agent.bootstrap,
      contextWindowTokens: config.agent.contextWindowTokens,
      approvals,
      systemPrompt: config.agent.systemPrompt,
      runTimeoutMs,
      logger: agentLog,
      supersede: (runId) => control.stop(runId, "superseded"),
      activity,
      requeue: (request) => lane.enqueue(request),
      dataLost: (since) => epoch.lostSince(since),
      typing: async (target) => adapters.forAccount(target.channel, target.accountId)?.sendTyping(target),
      capabilitiesOf: (channel) => adapters.forChannel(channel)?.capabilities,
    });
    const role = await startAgentRole({
      runner,
      lane,
      control,
      redisUrl: url,
      prefix,
      maxConcurrentRuns: config.agent.maxConcurrentRuns,
      recover: async () => {
        // Our dead predecessor's sessions are free at once, so recovery can resume them now.
        await lane.reclaimDeadPredecessors();
        return recoverInterruptedRuns({ runs, sessions, lane, activity, runTimeoutMs, logger: agentLog });
      },
    });
    workers.push(role.worker);
    cleanups.push(role.close);
  }

  let dispatcher: InboundDispatcher | undefined;
  let gateway: GatewayServer | undefined;
  let supervisor: ChannelSupervisor | undefined;
  if (roles.has("ingress")) {
    const admission = new SessionAdmission(redis, prefix, lane, config.agent.queueMode);
    dispatcher = new InboundDispatcher({
      redis,
      prefix,
      config,
      admit: (request, dedupe) => admission.admit(request, dedupe),
      commands: createCommandHandler({
        config,
        activity,
        control,
        sessions,
        runs,
        replies,
        events,
        approvals,
        lastModelDecision,
        logger: logger.child({ component: "commands" }),
      }),
      logger: logger.child({ component: "dispatch" }),
      notify: (ctx, text) => sendNotice(replies, ctx.replyTarget, text),
    });
    const admit = dispatcher;
    gateway = new GatewayServer(
      {
        redis,
        prefix,
        logger: logger.child({ component: "gateway" }),
        agentId: config.agent.id,
        dmScope: config.agent.dmScope,
        webchat,
        runRecord: (runId) => runs.get(runId),
        history: async (sessionKey) => {
          const record = await sessions.get(sessionKey);
          return record
            ? { sessionId: record.sessionId, entries: await sessions.read(record.sessionId) }
            : undefined;
        },
        abort: (runId) => control.stop(runId, "aborted"),
        pairing: {
          list: () => admit.pairing.list(),
          turnedAway: () => admit.pairing.turnedAway(),
          approve: (channel, code) => approvePairing(admit.pairing, replies, channel, code),
        },
        subscribeEvents: (handler) => events.subscribe(subscriber, handler),
        publishEvent: (event) => events.publish(event),
        channelStatus: () => supervisor?.statuses() ?? [],
      },
      {
        host: config.gateway.host,
        port: config.gateway.port,
        token: options.token,
        maxFrameBytes: config.gateway.maxFrameBytes,
        webRoot,
        routes: channelAdapters.flatMap((a) => a.httpRoutes?.() ?? []),
        clients: config.gateway.clients,
        allowedOrigins: config.gateway.allowedOrigins,
        password: config.gateway.password,
        connectionLimits: {
          maxConnections: config.gateway.maxConnections,
          maxPerAddress: config.gateway.maxConnectionsPerAddress,
          headersTimeoutMs: config.gateway.headersTimeoutMs,
        },
      },
    );
    await gateway.start();
    // Channels connect in the background: the gateway and the healthy channels never wait for a broken one.
    supervisor = new ChannelSupervisor(
      [...channelAdapters, webchat],
      (fields, o) => admitInbound(() => admit.dispatchInboundMessage(fields, o)),
      logger,
      tuning.channelBackoff,
    );
    supervisor.start();
    const supervised = supervisor;
    stopAdapters.push(() => supervised.stop());
  }

  return {
    port: gateway?.port ?? 0,
    token: options.token,
    dispatcher,
    replies,
    channels: () => supervisor?.statuses() ?? [],
    channelsSettled: () => supervisor?.firstAttempts() ?? Promise.resolve(),
    stop: async () => {
      for (const stop of stopAdapters) await stop();
      await gateway?.stop();
      // Runs first (they wait for their replies), delivery last.
      for (const w of [...workers].reverse()) await w.close();
      for (const c of cleanups) await c();
      await lane.close();
      await replies.close();
      events.close();
      epoch.stop();
      subscriber.disconnect();
      redis.disconnect();
    },
  };
}
