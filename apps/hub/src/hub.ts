import type { ChannelAdapter, ChannelPlugin, HubConfig, HubLogger } from "@hub/core";
import type { InboundDispatcher } from "@hub/dispatch";
import type { ReplyDispatcher } from "@hub/reply";
import { type ProbeAddress, startHealthServer } from "./health-server.js";
import type { HubOperations } from "./operations.js";
import { announceProcess } from "./process-registry.js";
import { startAdmission } from "./stages/admission.js";
import { connectBase, type HubTuning, shutdownBase } from "./stages/base.js";
import { buildEntry } from "./stages/entry.js";
import { startExecution } from "./stages/execution.js";
import { buildSessionStage } from "./stages/session.js";
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
  const session = buildSessionStage(base);
  if (base.roles.has("agent")) await startExecution(base, entry, replies, session);
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
