// The delivery part of `npm run bench` (and of delivery-run.ts): ordered delivery against its baselines,
// then one throttled target among many.
import { benchBullmqSend, benchPlainHttp, benchRawBullmq } from "./baselines.js";
import { benchDelivery } from "./delivery.js";
import { benchEnv as env } from "./meter.js";
import { benchThrottled } from "./throttled.js";

const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "-");

/** Ordered delivery of BENCH_TARGETS x BENCH_SEGMENTS against its baselines; then the throttled run unless told not to. */
export async function benchDeliveryPhase(redisUrl: string, options: { throttled: boolean }): Promise<void> {
  const targets = env("BENCH_TARGETS", 200);
  const segments = env("BENCH_SEGMENTS", 10);
  console.log(`ordered delivery: ${targets} targets x ${segments} segments`);
  const raw = await benchRawBullmq(redisUrl, targets, segments);
  const bullmqSend = await benchBullmqSend(redisUrl, targets, segments);
  const http = await benchPlainHttp(targets, segments);
  const ordered = await benchDelivery(redisUrl, targets, segments);
  console.log(
    `  ratio ordered / BullMQ job per segment: ${ratio(ordered, bullmqSend)} with its send (target >= 1.3), ` +
      `${ratio(ordered, raw)} raw (no send); ordered / plain HTTP: ${ratio(ordered, http)} (target >= 0.75)`,
  );
  if (!options.throttled) return;
  console.log("one throttled target (target: the others' p99 <= 30 ms at 1,000 segments/s)");
  await benchThrottled(redisUrl, {
    rate: env("BENCH_THROTTLE_RATE", 1000),
    seconds: env("BENCH_THROTTLE_SECONDS", 5),
    targets: env("BENCH_THROTTLE_TARGETS", 100),
  });
}
