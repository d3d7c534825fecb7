import { createCommandHandler } from "@hub/agent";
import { admitInbound, InboundDispatcher } from "@hub/dispatch";
import { AuthFailureLimiter, type GatewayDeps, GatewayServer } from "@hub/gateway";
import type { ReplyDispatcher } from "@hub/reply";
import { webRoot } from "@hub/web";
import { operatorRoutes } from "../operator-routes.js";
import { approvePairing, sendNotice } from "../pairing.js";
import { ChannelSupervisor } from "../supervisor.js";
import type { HubBase } from "./base.js";
import type { EntryStage } from "./entry.js";
import type { SessionStage } from "./session.js";

/** What a process with the `ingress` role runs: admission, the gateway and the supervised channels. */
export interface IngressStage {
  dispatcher: InboundDispatcher;
  gateway: GatewayServer;
  supervisor: ChannelSupervisor;
}

/**
 * Stage 2, admission: every inbound message (from a channel, or the web chat
 * through the gateway) is finalized, deduped, checked against the access
 * policy and rate limits, and admitted into its session in one atomic step;
 * session commands are answered here. Then the gateway listens and the
 * channels connect, each in the background.
 */
export async function startAdmission(
  base: HubBase,
  entry: EntryStage,
  replies: ReplyDispatcher,
  s: SessionStage,
  token: string,
): Promise<IngressStage> {
  const { config, redis, logger } = base;
  const prefix = config.redis.prefix;
  const dispatcher = new InboundDispatcher({
    redis,
    prefix,
    config,
    admit: (request, dedupe, buckets) => s.admission.admit(request, dedupe, buckets),
    commands: createCommandHandler({
      ...s,
      config,
      replies,
      events: base.events,
      announcements: base.announcements,
      logger: logger.child({ component: "commands" }),
    }),
    logger: logger.child({ component: "dispatch" }),
    notify: (ctx, text) => sendNotice(replies, ctx.replyTarget, text),
  });
  let supervisor: ChannelSupervisor | undefined;
  const gateway = startGateway(
    base,
    entry,
    replies,
    s,
    dispatcher,
    token,
    () => supervisor?.statuses() ?? [],
  );
  await gateway.start();
  // Stopped after the workers: runs finishing in a drain still reach web chat clients (intake is refused meanwhile).
  base.shutdown.rest.push(() => gateway.stop());
  supervisor = superviseChannels(base, entry, dispatcher);
  return { dispatcher, gateway, supervisor };
}

/**
 * The channels connect in the background: the gateway and the healthy channels never wait for a broken one.
 * At a stop, inbound pauses first (what a platform keeps for later stays there); the connections close only
 * after delivery, which sends through them until then (a Discord client forgets its REST token at its stop).
 */
function superviseChannels(
  base: HubBase,
  entry: EntryStage,
  dispatcher: InboundDispatcher,
): ChannelSupervisor {
  const lostIfRefused = new Set(
    entry.channels.filter((a) => a.capabilities.redelivers === false).map((a) => a.channel),
  );
  const supervisor = new ChannelSupervisor(
    [...entry.channels, entry.webchat],
    (fields, o) =>
      base.operations.admit(
        fields.channel,
        () => admitInbound(() => dispatcher.dispatchInboundMessage(fields, o)),
        !lostIfRefused.has(fields.channel),
      ),
    base.logger,
    base.tuning.channelBackoff,
  );
  supervisor.start();
  base.operations.onDraining(() => supervisor.pauseIntake());
  base.shutdown.intake.unshift(() => supervisor.pauseIntake());
  base.shutdown.rest.push(() => supervisor.stop());
  return supervisor;
}

// What chat.history reads of a session: its transcript, and the messages accepted and not written yet.
function sessionReads(s: SessionStage): Pick<GatewayDeps, "history" | "waiting"> {
  return {
    history: async (sessionKey) => {
      const record = await s.sessions.get(sessionKey);
      return record
        ? { sessionId: record.sessionId, entries: await s.sessions.read(record.sessionId) }
        : undefined;
    },
    // Queued in the lane, steered into its running run or collected: in the order they were sent.
    waiting: async (sessionKey) => {
      const [queued, other] = await Promise.all([s.lane.queued(sessionKey), s.activity.waiting(sessionKey)]);
      // A collect run's first message is in the lane and in the collected batch: once.
      const byRun = new Map([...queued, ...other].map((r) => [r.runId, r]));
      return [...byRun.values()].sort((a, b) => a.ctx.timestamp - b.ctx.timestamp);
    },
  };
}

function startGateway(
  base: HubBase,
  entry: EntryStage,
  replies: ReplyDispatcher,
  s: SessionStage,
  dispatcher: InboundDispatcher,
  token: string,
  channelStatus: () => ReturnType<ChannelSupervisor["statuses"]>,
): GatewayServer {
  const { config, logger } = base;
  const gw = config.gateway;
  const authFailures = new AuthFailureLimiter();
  return new GatewayServer(
    {
      redis: base.redis,
      prefix: config.redis.prefix,
      logger: logger.child({ component: "gateway" }),
      agentId: config.agent.id,
      dmScope: config.agent.dmScope,
      webchat: entry.webchat,
      runRecord: (runId) => s.runs.get(runId),
      ...sessionReads(s),
      abort: (runId) => s.control.stop(runId, "aborted"),
      pairing: {
        list: () => dispatcher.pairing.list(),
        turnedAway: () => dispatcher.pairing.turnedAway(),
        approve: (channel, code) => approvePairing(dispatcher.pairing, replies, channel, code),
      },
      subscribeEvents: (handler, wanted) => base.events.subscribe(base.subscriber, handler, wanted),
      connectionsChanged: (count) => base.events.listeners.clientsHere(count),
      publishEvent: (event) => base.events.publish(event),
      channelStatus,
    },
    {
      host: gw.host,
      port: gw.port,
      token,
      maxFrameBytes: gw.maxFrameBytes,
      webRoot,
      pages: { "/control": "control.html", "/admin/queues": "queues.html" },
      routes: operatorRoutes(base, entry, s, dispatcher, replies, {
        token,
        channels: channelStatus,
        authFailures,
      }),
      authFailures,
      clients: gw.clients,
      allowedOrigins: gw.allowedOrigins,
      allowedHosts: gw.allowedHosts,
      password: gw.password,
      connectionLimits: {
        maxConnections: gw.maxConnections,
        maxPerAddress: gw.maxConnectionsPerAddress,
        headersTimeoutMs: gw.headersTimeoutMs,
      },
      pingIntervalMs: gw.pingIntervalMs,
    },
  );
}
