import type { ModelEvent, ModelProvider, ModelRequest } from "@hub/agent";
import { type ChannelAdapter, type InboundResult, RateLimitedError } from "@hub/core";
import { queueDepths } from "@hub/queue";
import { FailedDeliveries } from "@hub/reply";
import { RunRecords, type StartedRun, type TerminalStatus } from "@hub/sessions";
import type { Redis } from "ioredis";
import {
  AggregatorRegistry,
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type MetricObjectWithValues,
  type MetricValue,
  Registry,
} from "prom-client";

/** What happened to an inbound message, as `/metrics` counts it. */
export type InboundOutcome = "answered" | "ignored" | "denied" | "duplicate" | "rejected" | "retry";

/** The outcome label of an admission result (an `ignored` for an access reason is `denied`). */
export function inboundOutcome(result: InboundResult): InboundOutcome {
  switch (result.kind) {
    case "accepted":
      return "answered";
    case "ignored":
      return /not allowed|allowlist|pairing|denied|disabled|blocked/i.test(result.reason)
        ? "denied"
        : "ignored";
    default:
      return result.kind;
  }
}

/** The metrics of one part of a process (an agent thread), as prom-client's `getMetricsAsJSON` gives them. */
export type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/**
 * The hub's Prometheus metrics (registries per hub, so tests can run several
 * hubs in one process). Counters and histograms are per process (`registry`); the
 * process's own figures and the gauges, which read Redis when scraped and so show
 * the whole installation, are in a registry of their own. An agent thread's
 * (`processWide` false) has only the counters and histograms: the main thread's
 * scrape adds them to its own and reports the process and the installation once.
 */
export class HubMetrics {
  /** The counters and histograms (what an agent thread reports to the main thread). */
  readonly registry = new Registry();
  /** The process's default metrics and the installation's gauges (none on an agent thread). */
  readonly #processWide = new Registry();
  readonly inbound = new Counter({
    name: "hub_inbound_messages_total",
    help: "Inbound messages by channel and outcome (answered, ignored, denied, duplicate, rejected, retry).",
    labelNames: ["channel", "outcome"] as const,
    registers: [this.registry],
  });
  readonly runs = new Counter({
    name: "hub_runs_total",
    help: "Runs by terminal outcome.",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly runDuration = new Histogram({
    name: "hub_run_duration_seconds",
    help: "From a run's first start to its terminal outcome.",
    buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });
  readonly firstToken = new Histogram({
    name: "hub_model_first_token_seconds",
    help: "From a model call to its first streamed text (latency to first token).",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });
  readonly delivery = new Histogram({
    name: "hub_delivery_seconds",
    help: "Time of one segment's send to its platform, by channel.",
    labelNames: ["channel"] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [this.registry],
  });
  readonly sendFailures = new Counter({
    name: "hub_delivery_failures_total",
    help: "Failed send attempts by channel and kind (rate_limited = the platform answered 429; error = anything else, retried).",
    labelNames: ["channel", "kind"] as const,
    registers: [this.registry],
  });
  readonly #inFlight = new Map<string, StartedRun>();
  readonly #metered = new WeakMap<ChannelAdapter, ChannelAdapter>();
  /** The agent threads' metrics, added to this registry's at each scrape. */
  #threads: (() => Promise<MetricsSnapshot[]>) | undefined;

  constructor(redis: Redis, prefix: string, options: { processWide?: boolean } = {}) {
    if (options.processWide === false) return;
    collectDefaultMetrics({ register: this.#processWide });
    const failed = new FailedDeliveries(redis, prefix);
    const records = new RunRecords(redis, prefix);
    new Gauge({
      name: "hub_queue_depth",
      help: "Items waiting in each ordered mailbox kind (reply = segments to deliver, runs = runs waiting for their session).",
      labelNames: ["queue"] as const,
      registers: [this.#processWide],
      async collect() {
        this.reset();
        for (const [queue, depth] of Object.entries(await queueDepths(redis, prefix)))
          this.set({ queue }, depth);
      },
    });
    new Gauge({
      name: "hub_failed_deliveries",
      help: "Segments delivery gave up on, kept for `hub deliveries retry`.",
      registers: [this.#processWide],
      async collect() {
        this.set(await failed.count());
      },
    });
    new Gauge({
      name: "hub_active_sessions",
      help: "Sessions with a run in flight.",
      registers: [this.#processWide],
      async collect() {
        this.set(new Set((await records.running()).map((r) => r.sessionKey)).size);
      },
    });
  }

  /** Counts one admission result. */
  countInbound(channel: string, result: InboundResult): InboundResult {
    this.inbound.inc({ channel, outcome: inboundOutcome(result) });
    return result;
  }

  /** Notes a run's start in this process (runs in flight, for the drain). */
  runStarted(run: StartedRun): void {
    if (!this.#inFlight.has(run.runId)) this.#inFlight.set(run.runId, run);
  }

  /** Runs started in this process whose outcome is not decided yet. */
  inFlight(): StartedRun[] {
    return [...this.#inFlight.values()];
  }

  /** A run this process no longer works on (its outcome decided here or elsewhere): not in flight here. */
  runLeft(runId: string): void {
    this.#inFlight.delete(runId);
  }

  /** Counts a terminal outcome decided in this process. */
  runFinished(runId: string, status: TerminalStatus, startedAt: number | undefined): void {
    this.runs.inc({ outcome: status });
    if (startedAt) this.runDuration.observe((Date.now() - startedAt) / 1000);
    this.#inFlight.delete(runId);
  }

  /** The model resolver with each call's latency to its first streamed text observed. */
  meterModels<R extends { provider: ModelProvider; model: string }>(
    resolve: (ref: string) => R,
  ): (ref: string) => R {
    const histogram = this.firstToken;
    return (ref) => {
      const resolved = resolve(ref);
      const { provider } = resolved;
      const stream = (request: ModelRequest): AsyncIterable<ModelEvent> => ({
        [Symbol.asyncIterator]: () => timedToFirstText(provider.stream(request), histogram.startTimer()),
      });
      return { ...resolved, provider: { id: provider.id, stream } };
    };
  }

  /**
   * The adapter with its sends timed and their failures counted. Delivery asks for it per segment: the
   * metered view of an adapter is made once and kept while the adapter lives.
   */
  meterAdapter(adapter: ChannelAdapter | undefined): ChannelAdapter | undefined {
    if (!adapter) return undefined;
    let metered = this.#metered.get(adapter);
    if (!metered) {
      metered = this.#meter(adapter);
      this.#metered.set(adapter, metered);
    }
    return metered;
  }

  #meter(adapter: ChannelAdapter): ChannelAdapter {
    // The channel's histogram child, bound once: prom-client otherwise hashes the labels on every send.
    const timed = this.delivery.labels({ channel: adapter.channel });
    const send: ChannelAdapter["send"] = async (segment, target, options) => {
      const end = timed.startTimer();
      try {
        const result = await adapter.send(segment, target, options);
        end();
        return result;
      } catch (error) {
        const limited = error instanceof RateLimitedError;
        this.sendFailures.inc({ channel: adapter.channel, kind: limited ? "rate_limited" : "error" });
        throw error;
      }
    };
    // A proxy, not a copy: the adapter's own methods and getters run on the adapter itself (private fields).
    // A method is bound once (per function it currently is), not on every read.
    const bound = new Map<PropertyKey, { of: unknown; fn: unknown }>();
    return new Proxy(adapter, {
      get: (target, prop) => {
        if (prop === "send") return send;
        const value: unknown = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        const known = bound.get(prop);
        if (known?.of === value) return known.fn;
        const fn: unknown = value.bind(target);
        bound.set(prop, { of: value, fn });
        return fn;
      },
    });
  }

  /** Adds the agent threads' counters and histograms to every scrape. */
  addThreads(snapshots: () => Promise<MetricsSnapshot[]>): void {
    this.#threads = snapshots;
  }

  /** The text exposition of every metric: the process's and the installation's, then the counts (with the agent threads'). */
  async render(): Promise<string> {
    const [processWide, counts] = await Promise.all([this.#processWide.metrics(), this.#counts()]);
    return `${processWide}\n${counts}`;
  }

  async #counts(): Promise<string> {
    if (!this.#threads) return this.registry.metrics();
    const [own, threads] = await Promise.all([this.registry.getMetricsAsJSON(), this.#threads()]);
    return AggregatorRegistry.aggregate([own, ...threads]).metrics();
  }
}

/**
 * The events of `stream`, with `end` called at its first text: once that is seen, each `next` is the
 * stream's own (no hand-off per event, as an async generator wrapper would add).
 */
function timedToFirstText(stream: AsyncIterable<ModelEvent>, end: () => void): AsyncIterator<ModelEvent> {
  const inner = stream[Symbol.asyncIterator]();
  let waiting = true;
  const observe = (result: IteratorResult<ModelEvent>) => {
    if (!result.done && result.value.type === "text") {
      waiting = false;
      end();
    }
    return result;
  };
  return {
    next: () => (waiting ? inner.next().then(observe) : inner.next()),
    return: async (value?: unknown) => (await inner.return?.(value)) ?? { done: true, value: undefined },
  };
}

/** A RunRecords whose starts and terminal outcomes feed the metrics. */
export class MeteredRunRecords extends RunRecords {
  constructor(
    redis: Redis,
    prefix: string,
    private readonly metrics: HubMetrics,
  ) {
    super(redis, prefix);
  }

  override noteStarted(run: StartedRun): void {
    this.metrics.runStarted(run);
  }

  override noteLeft(runId: string): void {
    this.metrics.runLeft(runId);
  }

  override async noteFinished(runId: string, status: TerminalStatus, startedAt?: number): Promise<void> {
    const record = startedAt === undefined ? await this.get(runId).catch(() => undefined) : undefined;
    // A message answered inside another run was never started itself: it has no run duration (its
    // startedAt is its admission, and the time since is how long it waited).
    const started = startedAt ?? (record && record.attempt > 0 ? record.startedAt : undefined);
    this.metrics.runFinished(runId, status, started);
  }
}
