// One throttled reply target among many: segments pushed at a steady rate across `targets` targets
// through the ReplyDispatcher; one target's platform answers every send with 429 (retry after 1 s). The
// platform runs in a process of its own (platform-process.ts), as a real one is not on the hub's event loop.
// A first second of the same load is not counted: a new dispatcher's first second (its connections to
// Redis and the platform opening, V8 compiling the delivery path) had a p99 of 130-470 ms with or
// without a throttled target, which put the 5 s figure anywhere from 19 to 935 ms. Prints the other
// targets' latency (pushed -> at the platform) p50/p99 after it, that first second's p99, and the rate.
import { performance } from "node:perf_hooks";
import {
  type ChannelAdapter,
  createLogger,
  type OutboundSegment,
  RateLimitedError,
  type ReplyTarget,
} from "@hub/core";
import { ReplyDispatcher } from "@hub/reply";
import { FakeChatAdapter, type PlatformMessage } from "../fakes/src/index.js";
import { dropPrefix, testPrefix } from "../support/redis.js";
import { pct } from "./meter.js";
import { startPlatformProcess } from "./platform-process.js";

const THROTTLED = "chat-throttled";

/** The load not counted before the measured one (s). */
const WARM_UP_SECONDS = 1;

/** The fake adapter, except that every send to THROTTLED is refused with a retry-after, as a throttling platform does. */
function throttlingAdapter(fake: FakeChatAdapter): ChannelAdapter {
  return Object.assign(Object.create(fake) as ChannelAdapter, {
    send: (segment: OutboundSegment, target: ReplyTarget, options?: { signal?: AbortSignal }) =>
      target.chatId === THROTTLED
        ? Promise.reject(new RateLimitedError(1000))
        : fake.send(segment, target, options ?? {}),
  });
}

/** Rates and targets of one throttled bench's load. */
interface LoadShape {
  rate: number;
  targets: number;
}

/**
 * Pushes `rate` segments/s for `seconds` round the targets (every `targets + 1`-th to THROTTLED), each
 * reply's id `<label><n>`, noting when each was pushed; resolves when all are pushed with the count of
 * the others' segments.
 */
async function pushAtRate(
  dispatcher: ReplyDispatcher,
  o: LoadShape,
  label: string,
  seconds: number,
  pushedAt: Map<string, number>,
): Promise<number> {
  const started = performance.now();
  const total = Math.round(o.rate * seconds);
  const pushes: Array<Promise<void>> = [];
  // Every 10 ms, the segments due by now: a steady rate, whatever the event loop's jitter.
  for (let sent = 0; sent < total; ) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * o.rate));
    for (; sent < due; sent++) {
      const t = sent % (o.targets + 1);
      const chatId = t === o.targets ? THROTTLED : `chat-${t}`;
      const replyId = `${label}${sent}`;
      const reply = dispatcher.open(replyId, { channel: "fakechat", accountId: "default", chatId });
      pushedAt.set(replyId, performance.now());
      pushes.push(reply.push(`segment ${sent}`, undefined, { last: true }));
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(pushes);
  return total - Math.floor(total / (o.targets + 1));
}

/** Pushes `rate` segments/s for `seconds` across `targets` targets (plus the throttled one); returns the others' p99 (ms). */
export async function benchThrottled(redisUrl: string, o: LoadShape & { seconds: number }): Promise<number> {
  const platform = await startPlatformProcess();
  const prefix = testPrefix("bench-throttled");
  const fake = new FakeChatAdapter("fakechat", platform.url, { textLimit: 1000 });
  const adapter = throttlingAdapter(fake);
  const dispatcher = new ReplyDispatcher({
    redisUrl,
    prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => fake.capabilities,
  });
  const worker = dispatcher.startDelivery(() => adapter, { concurrency: 50 });
  const epochOffset = Date.now() - performance.now();
  const pushedAt = new Map<string, number>();
  // The others' latencies of the replies labelled `label`, sorted.
  const latenciesOf = (messages: PlatformMessage[], label: string) =>
    messages
      .filter((m) => m.replyId.startsWith(label))
      .map((m) => m.at - epochOffset - (pushedAt.get(m.replyId) ?? m.at - epochOffset))
      .sort((a, b) => a - b);
  // Until the platform has `count` messages (or a minute passed).
  const delivered = async (count: number) => {
    const deadline = performance.now() + 60_000;
    while ((await platform.count()) < count && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
  };
  try {
    const warmUpOthers = await pushAtRate(dispatcher, o, "w", WARM_UP_SECONDS, pushedAt);
    // Its backlog delivered first: the measured load starts on empty queues.
    await delivered(warmUpOthers);
    const started = performance.now();
    const others = await pushAtRate(dispatcher, o, "r", o.seconds, pushedAt);
    await delivered(warmUpOthers + others);
    const seconds = (performance.now() - started) / 1000;
    const messages = await platform.messages();
    const latencies = latenciesOf(messages, "r");
    const p99 = Number(pct(latencies, 99));
    console.log(
      `  one throttled target (429 on every send) among ${o.targets} at ${o.rate} segments/s for ${o.seconds} s ` +
        `after ${WARM_UP_SECONDS} s of the same: others' latency p50 ${pct(latencies, 50)} ms, p99 ${p99} ms ` +
        `(the first second's p99 ${pct(latenciesOf(messages, "w"), 99)} ms); ` +
        `${latencies.length}/${others} delivered in ${seconds.toFixed(1)} s`,
    );
    return p99;
  } finally {
    await worker.close();
    await dispatcher.close();
    await platform.close();
    await dropPrefix(prefix);
  }
}
