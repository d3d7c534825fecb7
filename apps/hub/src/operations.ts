import type { ChannelPlugin, HttpRoute, HubConfig, HubLogger, InboundResult } from "@hub/core";
import { loadConfig } from "@hub/core";
import {
  type AuthFailureLimiter,
  drainGuard,
  metricsRoute,
  type Readiness,
  readinessRoute,
} from "@hub/gateway";
import type { StartedRun } from "@hub/sessions";
import type { Redis } from "ioredis";
import { HubMetrics, type MetricsSnapshot } from "./metrics.js";
import type { ChannelReport } from "./supervisor.js";

/**
 * What the operator sees and steers on a running hub: metrics, readiness,
 * the draining flag (set on SIGTERM) and the SIGHUP reload of channel
 * policies. startHub creates one and wires it in a few places.
 */
export class HubOperations {
  readonly metrics: HubMetrics;
  #draining = false;
  readonly #drainListeners: Array<() => Promise<void>> = [];
  /** The workers of this process's roles (`agent`: the session lane's runner or its threads, `delivery`: the senders). */
  readonly #workers: Array<{ role: string; worker: RoleWorker }> = [];
  /** The agent threads running this process's agent role, when it has them (`agent.threads`). */
  #threads: AgentThreadsView | undefined;
  /** The channels this process was started with: only they have adapters. */
  readonly #startedWith: ReadonlySet<string>;

  constructor(
    private readonly config: HubConfig,
    private readonly redis: Redis,
    private readonly logger: HubLogger,
    options: { processWide?: boolean } = {},
  ) {
    this.metrics = new HubMetrics(redis, config.redis.prefix, options);
    this.#startedWith = new Set(Object.keys(config.channels));
  }

  /** True once draining started: intake answers "retry later" and readiness fails. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Stops intake (webhooks answer 503 with Retry-After, /readyz fails), and tells `onDraining`'s listeners. */
  startDraining(): void {
    if (this.#draining) return;
    this.#draining = true;
    for (const listener of this.#drainListeners) void listener();
  }

  /** Called once when draining starts (e.g. channels hand their polling over to a standby process). */
  onDraining(listener: () => Promise<void>): void {
    this.#drainListeners.push(listener);
  }

  /** Counts a role's worker in readiness: the process is not ready once it stopped taking work. */
  watchWorker(role: string, worker: RoleWorker): void {
    this.#workers.push({ role, worker });
  }

  /**
   * The agent threads that run this process's agent role: readiness asks them, `/metrics` adds their counts,
   * `runsInFlight` their runs, and a reload that applied reaches them.
   */
  addAgentThreads(threads: AgentThreadsView): void {
    this.#threads = threads;
    this.watchWorker("agent", threads);
    this.metrics.addThreads(() => threads.metrics());
  }

  /** The runs this process has in flight, on its main thread and its agent threads: what a drain waits for. */
  async runsInFlight(): Promise<StartedRun[]> {
    return [...this.metrics.inFlight(), ...((await this.#threads?.runs()) ?? [])];
  }

  /**
   * Admits one inbound message unless the hub is draining and the platform
   * delivers it again (`ChannelCapabilities.redelivers`): then it answers `retry`
   * (webhooks get a retryable status, an update polling still holds keeps its offset, chat.send says to
   * send again), so nothing new is taken while runs finish. A message its platform
   * would never deliver again is admitted durably even while draining: it runs in
   * another hub process, or here after the restart, instead of being lost.
   */
  async admit(
    channel: string,
    admit: () => Promise<InboundResult>,
    redelivers = true,
  ): Promise<InboundResult> {
    const result: InboundResult =
      this.#draining && redelivers
        ? {
            kind: "retry",
            reason:
              "the hub is shutting down and takes no new message now (a platform that redelivers sends it again after the restart)",
          }
        : await admit();
    return this.metrics.countInbound(channel, result);
  }

  /** The gateway's HTTP routes: the adapters' webhooks (guarded while draining), /readyz and /metrics. */
  routes(
    webhooks: HttpRoute[],
    channels: () => ChannelReport[],
    gatewayToken: string,
    authFailures: AuthFailureLimiter,
  ): HttpRoute[] {
    const { metrics } = this.config;
    const access =
      metrics.access === "token"
        ? { kind: "token" as const, token: metrics.token ?? gatewayToken }
        : { kind: "loopback" as const };
    return [
      ...webhooks.map((route) => ({ ...drainGuard(route, () => this.#draining), anyHost: true })),
      readinessRoute(() => this.readiness(channels())),
      ...(metrics.enabled ? [metricsRoute(() => this.metrics.render(), access, authFailures)] : []),
    ];
  }

  /**
   * Ready = not draining, Redis answers, every role's worker takes work, and every configured
   * channel account is connected (a process without the ingress role has none).
   */
  async readiness(channels: ChannelReport[]): Promise<Readiness> {
    const reasons: string[] = [];
    if (this.#draining) reasons.push("the hub is shutting down");
    for (const { role, worker } of this.#workers)
      if (!(await worker.running()))
        reasons.push(`the ${role} role's worker has stopped taking work; restart this hub process`);
    try {
      await withTimeout(this.redis.ping(), 2000);
    } catch (error) {
      reasons.push(`Redis does not answer (${(error as Error).message})`);
    }
    // A standby (another process of the installation holds the connection) serves nothing here but is ready.
    for (const c of channels) {
      if (c.status.state !== "connected" && !c.status.standby)
        reasons.push(
          `channel ${c.channel} (account ${c.accountId}) is ${c.status.state}${c.status.reason ? `: ${c.status.reason}` : ""}`,
        );
    }
    return { ready: reasons.length === 0, reasons };
  }

  /**
   * SIGHUP: reads the config file again and applies its channel access
   * (allowlists, DM and group policies, per-channel tools) to the running hub;
   * credentials and everything else need a restart. An invalid file changes nothing.
   */
  reload(path: string | undefined, plugins: ReadonlyArray<ChannelPlugin>): boolean {
    try {
      const next = loadConfig({ path, plugins }).config;
      const channels = this.config.channels as Record<string, unknown>;
      // A channel or account the hub was not started with has no adapter: it needs a restart to connect.
      const added = Object.keys(next.channels).filter((name) => !this.#startedWith.has(name));
      for (const name of Object.keys(channels)) if (!(name in next.channels)) delete channels[name];
      Object.assign(channels, next.channels);
      this.logger.info({ channels: Object.keys(next.channels) }, "reloaded channel allowlists and policies");
      if (added.length > 0)
        this.logger.warn(
          { added },
          `channels added to the config (${added.join(", ")}) connect only after a restart; the reload applies access settings`,
        );
      this.#threads?.reload();
      return true;
    } catch (error) {
      this.logger.error(
        { err: (error as Error).message },
        "config reload failed; the running config is unchanged",
      );
      return false;
    }
  }
}

/** What readiness asks of a role's worker: a mailbox worker, or the agent threads standing for one. */
export interface RoleWorker {
  running(): boolean | Promise<boolean>;
}

/** What HubOperations asks of the agent threads (agent-threads.ts). */
export interface AgentThreadsView extends RoleWorker {
  metrics(): Promise<MetricsSnapshot[]>;
  runs(): Promise<StartedRun[]>;
  /** Each thread reads the config file again. */
  reload(): void;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref(),
    ),
  ]);
}
