// `npx tsx test/bench/delivery-run.ts`: only the delivery figures of `npm run bench` (ordered delivery
// against its baselines, and the throttled target), for quick before/after runs on a private Redis.
// `--ordered-only`: a warm-up, then ordered delivery alone, its window (monotonic µs, the clock of V8's
// profiles) written to BENCH_WINDOW_FILE when set, for CPU profiles
// (`node --cpu-prof --cpu-prof-dir=<dir> --import tsx test/bench/delivery-run.ts --ordered-only`).
import { writeFileSync } from "node:fs";
import { benchBullmqSend, benchPlainHttp, benchRawBullmq } from "./baselines.js";
import { benchDelivery } from "./delivery.js";
import { startBenchRedis } from "./meter.js";
import { benchThrottled } from "./throttled.js";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const targets = env("BENCH_TARGETS", 200);
const segments = env("BENCH_SEGMENTS", 10);
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "-");

const redis = await startBenchRedis();
try {
  if (process.argv.includes("--ordered-only")) {
    await benchDelivery(redis.url, 50, 4);
    const from = process.hrtime.bigint() / 1000n;
    await benchDelivery(redis.url, targets, segments);
    if (process.env.BENCH_WINDOW_FILE)
      writeFileSync(process.env.BENCH_WINDOW_FILE, `${from} ${process.hrtime.bigint() / 1000n}`);
    await redis.stop();
    process.exit(0);
  }
  console.log(`ordered delivery: ${targets} targets x ${segments} segments`);
  const raw = await benchRawBullmq(redis.url, targets, segments);
  const bullmqSend = await benchBullmqSend(redis.url, targets, segments);
  const http = await benchPlainHttp(targets, segments);
  const ordered = await benchDelivery(redis.url, targets, segments);
  console.log(
    `  ratio ordered / BullMQ job per segment: ${ratio(ordered, bullmqSend)} with its send (target >= 1.3), ` +
      `${ratio(ordered, raw)} raw (no send); ordered / plain HTTP: ${ratio(ordered, http)} (target >= 0.75)`,
  );
  if (!process.argv.includes("--no-throttled")) {
    console.log("one throttled target (target: the others' p99 <= 30 ms at 1,000 segments/s)");
    await benchThrottled(redis.url, {
      rate: env("BENCH_THROTTLE_RATE", 1000),
      seconds: env("BENCH_THROTTLE_SECONDS", 5),
      targets: env("BENCH_THROTTLE_TARGETS", 100),
    });
  }
} finally {
  await redis.stop();
}
process.exit(0);
