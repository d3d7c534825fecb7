import type { RemoteWorker } from "@hub/queue";
import { ReplyDispatcher, type SettleRelay } from "@hub/reply";
import { hubOutbox, startOutboxSweeper } from "../outbox.js";
import type { HubBase } from "./base.js";
import type { EntryStage } from "./entry.js";

/** How long a stopping process waits for replies to settle before it announces their runs' ends anyway. */
const ANNOUNCE_GRACE_MS = 5000;

/**
 * Stage 5, settlement: the ReplyDispatcher that every run's reply goes
 * through (chunked per channel, ordered per reply target, durable), and, in a
 * process with the `delivery` role, the workers that send it to the platforms. An agent thread's pushes
 * claim idle targets for the main thread's delivery (`remoteDelivery`), which tells it its replies'
 * settlements (`settleRelay`).
 */
export async function startSettlement(
  base: HubBase,
  entry: EntryStage,
  thread: { remoteDelivery?: RemoteWorker | undefined; settleRelay?: SettleRelay | undefined } = {},
): Promise<ReplyDispatcher> {
  const { config, tuning } = base;
  const replies = new ReplyDispatcher({
    redisUrl: config.redis.url,
    // One commands connection per process: a message's steps issued in one turn share a write.
    redis: base.redis,
    prefix: config.redis.prefix,
    logger: base.logger.child({ component: "reply" }),
    capabilitiesOf: (channel) => entry.adapters.forChannel(channel)?.capabilities,
    maxAttempts: config.delivery.maxAttempts,
    sendTimeoutMs: config.delivery.sendTimeoutMs,
    maxAgeMs: config.delivery.maxAgeMs,
    leaseMs: tuning.leaseMs ?? config.delivery.leaseMs,
    outbox: hubOutbox(base),
    remoteDelivery: thread.remoteDelivery,
    settleRelay: thread.settleRelay,
    ...base.mailbox,
  });
  base.shutdown.rest.push(() => replies.close());
  if (base.roles.has("delivery")) {
    const adapterOf = (channel: string, accountId: string) =>
      base.operations.metrics.meterAdapter(entry.adapters.forAccount(channel, accountId));
    const worker = replies.startDelivery(adapterOf, {
      concurrency: tuning.deliveryConcurrency ?? 50,
      // Agent threads' pushes claim targets for it (see ReplyDispatcher.deliveryRoom).
      shared: config.agent.threads > 0,
    });
    base.shutdown.workers.push(worker);
    base.operations.watchWorker("delivery", worker);
    startOutboxSweeper(base, hubOutbox(base));
    // Reply targets our dead predecessor was delivering resume now, not a lease later.
    await replies.reclaimDeadPredecessors();
  }
  // Stopped after the runs (registered later, stopped first) and before delivery: delivery here still settles
  // the replies whose ends wait to be announced.
  base.shutdown.workers.push({ close: () => base.announcements.drain(ANNOUNCE_GRACE_MS) });
  return replies;
}
