import { PendingAnnouncements } from "@hub/agent";
import type { HubConfig, HubLogger } from "@hub/core";
import { ChatEventBus } from "@hub/gateway";
import { createRedis, onRedisConnectionError, RedisEpoch } from "@hub/queue";
import type { Redis } from "ioredis";
import { HubOperations } from "../operations.js";
import { instanceIdOf } from "../state.js";

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

/**
 * What every stage shares: the config, Redis (commands, a subscriber, the
 * data-loss epoch), the chat event bus, the mailbox tuning of this
 * installation, and the shutdown order the stages register into.
 */
export interface HubBase {
  config: HubConfig;
  stateDir: string;
  logger: HubLogger;
  tuning: HubTuning;
  roles: ReadonlySet<string>;
  redis: Redis;
  subscriber: Redis;
  events: ChatEventBus;
  epoch: RedisEpoch;
  /** Metrics, readiness, draining and reload (apps/hub/src/operations.ts). */
  operations: HubOperations;
  /** Mailbox options shared by the session lane and delivery (instance id for fast restarts, test tuning). */
  mailbox: { instanceId: string; sweepIntervalMs: number | undefined; graceMs: number | undefined };
  /** Run and command ends waiting for their replies to settle before they are announced (see settlement.ts). */
  announcements: PendingAnnouncements;
  /** Shutdown, in this order: intake, then workers and then the rest (each last registered first). */
  shutdown: {
    intake: Array<() => Promise<void>>;
    /** Each given when the stop's caller stops waiting (`by`, epoch ms), for what announces in time. */
    workers: Array<{ close(by?: number): Promise<void> }>;
    rest: Array<() => Promise<void> | void>;
  };
}

/** How often a Redis outage is said again while it lasts (every connection fails at once, and retries). */
const OUTAGE_REPORT_EVERY_MS = 10_000;

// One clear line per outage period instead of a stack trace per connection per retry.
function reportRedisOutages(log: HubLogger): void {
  let lastReport = 0;
  onRedisConnectionError((error) => {
    const now = Date.now();
    if (now - lastReport < OUTAGE_REPORT_EVERY_MS) return;
    lastReport = now;
    log.warn(
      { err: error.message },
      "cannot reach Redis; retrying until it is back (new messages wait meanwhile). Check that Redis runs at redis.url.",
    );
  });
}

/** Connects to Redis and checks its data epoch (a loss is reported, never silent). */
export async function connectBase(
  config: HubConfig,
  options: {
    stateDir: string;
    logger: HubLogger;
    tuning?: HubTuning | undefined;
    /** An agent thread's base: its metrics are its counters only (the main thread reports the process). */
    agentThread?: boolean;
  },
): Promise<HubBase> {
  const { logger, tuning = {} } = options;
  reportRedisOutages(logger.child({ component: "redis" }));
  const redis = createRedis(config.redis.url);
  const subscriber = createRedis(config.redis.url);
  const events = new ChatEventBus(redis, config.redis.prefix, logger);
  const epoch = new RedisEpoch(redis, config.redis.prefix, logger.child({ component: "redis" }));
  await epoch.start();
  // Chat events are published only while some gateway has a client (see ChatListeners).
  await events.listen(subscriber);
  const mailbox = {
    instanceId: instanceIdOf(options.stateDir),
    sweepIntervalMs: tuning.sweepIntervalMs,
    graceMs: tuning.graceMs,
  };
  return {
    config,
    stateDir: options.stateDir,
    logger,
    tuning,
    roles: new Set(config.roles),
    redis,
    subscriber,
    events,
    epoch,
    operations: new HubOperations(config, redis, logger, { processWide: !options.agentThread }),
    announcements: new PendingAnnouncements(),
    mailbox,
    shutdown: { intake: [], workers: [], rest: [] },
  };
}

/** Left, before the stop's caller stops waiting, to announce the run ends still waiting for their replies. */
const ANNOUNCE_RESERVE_MS = 1000;

/**
 * Stops everything the stages registered, in order, then closes Redis. `by` (epoch ms): when the caller stops
 * waiting and exits. The run ends still waiting for their replies are announced a second before, wherever
 * the stop is then (a hanging run holds the runs' worker, and the announcements' turn after it, past it).
 */
export async function shutdownBase(base: HubBase, by?: number): Promise<void> {
  const announceNow =
    by === undefined
      ? undefined
      : setTimeout(
          () => base.announcements.announceNow(),
          Math.max(0, by - ANNOUNCE_RESERVE_MS - Date.now()),
        );
  announceNow?.unref();
  try {
    await stopInOrder(base, by);
  } finally {
    clearTimeout(announceNow);
  }
}

async function stopInOrder(base: HubBase, by: number | undefined): Promise<void> {
  for (const stop of base.shutdown.intake) await stop();
  // Runs first (they wait for their replies), delivery last.
  for (const worker of [...base.shutdown.workers].reverse()) await worker.close(by);
  for (const close of [...base.shutdown.rest].reverse()) await close();
  base.events.close();
  base.epoch.stop();
  base.subscriber.disconnect();
  base.redis.disconnect();
}
