// The delivery part of `npm run bench` (and of delivery-run.ts): ordered delivery against its baselines,
// then one throttled target among many.
import { benchBullmqSend, benchPlainSends, benchRawBullmq } from "./baselines.js";
import { benchDelivery } from "./delivery.js";
import { benchEnv as env } from "./meter.js";
import { bareHttpSend, type SendKind, telegramSend } from "./send-kits.js";
import { benchThrottled } from "./throttled.js";

// A warm-up's targets: a tenth of the measured load's.
const warmUpTargets = (targets: number) => Math.max(1, Math.round(targets / 10));

const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "-");

// Runs `work` with console.log silenced (a warm-up's figures are not printed).
async function quietly(work: () => Promise<unknown>): Promise<void> {
  const log = console.log;
  console.log = () => {};
  try {
    await work();
  } finally {
    console.log = log;
  }
}

/**
 * Ordered delivery of BENCH_TARGETS x BENCH_SEGMENTS against its baselines, once per send (see
 * send-kits.ts); then the throttled run unless told not to.
 */
export async function benchDeliveryPhase(redisUrl: string, options: { throttled: boolean }): Promise<void> {
  const targets = env("BENCH_TARGETS", 200);
  const segments = env("BENCH_SEGMENTS", 10);
  console.log(`ordered delivery: ${targets} targets x ${segments} segments`);
  // Each side once at a tenth of the size first, not counted: a cold send path ran at a third of its
  // warm rate (V8 compiling, connections opening), which decided the ratios more than the queue did.
  await quietly(() => benchRawBullmq(redisUrl, warmUpTargets(targets), segments));
  const raw = await benchRawBullmq(redisUrl, targets, segments);
  for (const kind of [telegramSend, bareHttpSend]) await benchOneSend(redisUrl, targets, segments, kind, raw);
  if (!options.throttled) return;
  console.log("one throttled target (target: the others' p99 <= 30 ms at 1,000 segments/s)");
  await benchThrottled(redisUrl, {
    rate: env("BENCH_THROTTLE_RATE", 1000),
    seconds: env("BENCH_THROTTLE_SECONDS", 5),
    targets: env("BENCH_THROTTLE_TARGETS", 100),
  });
}

// Ordered delivery and its two baselines that send, each making `kind`'s send; the ratios.
async function benchOneSend(
  redisUrl: string,
  targets: number,
  segments: number,
  kind: SendKind,
  raw: number,
) {
  console.log(` every send ${kind.name}:`);
  // Warmed up as raw BullMQ was.
  await quietly(async () => {
    const [t, s] = [warmUpTargets(targets), segments];
    await benchBullmqSend(redisUrl, t, s, kind);
    await benchPlainSends(t, s, kind);
    await benchDelivery(redisUrl, t, s, kind);
  });
  const bullmqSend = await benchBullmqSend(redisUrl, targets, segments, kind);
  const plain = await benchPlainSends(targets, segments, kind);
  const ordered = await benchDelivery(redisUrl, targets, segments, kind);
  console.log(
    `  ratio ordered / BullMQ job per segment: ${ratio(ordered, bullmqSend)} with its send (target >= 1.3), ` +
      `${ratio(ordered, raw)} raw (no send); ordered / plain sends: ${ratio(ordered, plain)} (target >= 0.75)`,
  );
}
